package fstool

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/fs/policy"
	"github.com/dshq/dsh/tool"
)

// Defaults of [Options].
const (
	DefaultMaxLines      = 2000
	DefaultMaxLineLength = 2000
	DefaultMaxBytes      = 50 << 10
	DefaultCountLimit    = 16 << 20
)

// Options tune the tools. Zero fields take the defaults; the tool
// descriptions state the effective values.
type Options struct {
	// MaxLines is read's default and largest limit.
	MaxLines int
	// MaxLineLength is how many characters of a line read shows.
	MaxLineLength int
	// MaxBytes caps one read's output (line text plus separators).
	MaxBytes int
	// CountLimit is the largest file (bytes) whose total line count read
	// reports; beyond it read stops at the window and says the file goes on.
	CountLimit int64
}

func (o Options) withDefaults() Options {
	if o.MaxLines <= 0 {
		o.MaxLines = DefaultMaxLines
	}
	if o.MaxLineLength <= 0 {
		o.MaxLineLength = DefaultMaxLineLength
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.CountLimit <= 0 {
		o.CountLimit = DefaultCountLimit
	}
	return o
}

// Tools returns read, write and edit over p. A nil tracker disables the
// read-before-write policy (every write and edit is allowed), which is what
// trusted, non-agent compositions may want; agents get a tracker.
func Tools(p fs.Provider, t *policy.Tracker, opts Options) []tool.Tool {
	e := &env{p: p, t: t, o: opts.withDefaults()}
	return []tool.Tool{newRead(e), newWrite(e), newEdit(e)}
}

// env is what the three tools share.
type env struct {
	p fs.Provider
	t *policy.Tracker
	o Options
}

func (e *env) resolve(ctx context.Context, call tool.Call, path string) (fs.Target, error) {
	cwd := ""
	if call.Host != nil {
		cwd = call.Host.Cwd()
	}
	return e.p.Resolve(ctx, cwd, path)
}

// owner is whose reads authorize whose writes: the calling agent.
func owner(call tool.Call) string {
	if call.Host == nil {
		return ""
	}
	return call.Host.AgentID()
}

// observe records that the caller has seen version v of tg. Records are
// dropped when the agent's scope closes.
func (e *env) observe(call tool.Call, tg fs.Target, v fs.Version) {
	if e.t == nil || call.Host == nil {
		return
	}
	e.t.ForgetOnClose(owner(call), call.Host.Scope())
	e.t.Observed(owner(call), tg, v)
}

// guard is the caller's precondition for changing tg.
func (e *env) guard(call tool.Call, tg fs.Target) fs.Precondition {
	if e.t == nil {
		return nil
	}
	return e.t.Guard(owner(call), tg)
}

// describe fills the option placeholders of an embedded description.
func (e *env) describe(md string) string {
	return strings.NewReplacer(
		"{max_lines}", strconv.Itoa(e.o.MaxLines),
		"{max_line_length}", strconv.Itoa(e.o.MaxLineLength),
		"{max_kib}", strconv.Itoa(e.o.MaxBytes>>10),
	).Replace(strings.TrimSpace(md))
}

func missing(name, prop string) error {
	return tool.ArgsError(name, fmt.Sprintf("missing required property %q", prop))
}

// positiveInt reports whether x is an integer ≥ 1 that fits an int32 (line
// numbers beyond that are not a window anyone means).
func positiveInt(x float64) bool { return x >= 1 && x <= 1<<31-1 && x == float64(int64(x)) }

// meta is the presentation data of write and edit results.
type meta struct {
	// Operation is "create", "update" (write) or "edit".
	Operation string `json:"operation"`
	// Replacements is the number of occurrences an edit replaced.
	Replacements int `json:"replacements,omitempty"`
	// Diffs are the applied hunks, one per hunk, with context.
	Diffs []tool.FileDiff `json:"diffs"`
	// Unified is the same change as a unified diff.
	Unified string `json:"unified,omitempty"`
}

func encodeMeta(m meta) json.RawMessage {
	if m.Diffs == nil {
		m.Diffs = []tool.FileDiff{}
	}
	b, err := json.Marshal(m)
	if err != nil { // cannot happen for these types; presentation is optional anyway
		return nil
	}
	return b
}

// diffsFromMeta returns the hunks recorded in a result's Meta, or nil when
// Meta is missing, malformed or holds none. Every diff must have a path.
func diffsFromMeta(raw json.RawMessage) []tool.FileDiff {
	if len(raw) == 0 {
		return nil
	}
	var m struct {
		Diffs []struct {
			Path    *string `json:"path"`
			OldText *string `json:"oldText"`
			NewText *string `json:"newText"`
		} `json:"diffs"`
	}
	if json.Unmarshal(raw, &m) != nil || len(m.Diffs) == 0 {
		return nil
	}
	out := make([]tool.FileDiff, 0, len(m.Diffs))
	for _, d := range m.Diffs {
		if d.Path == nil || d.NewText == nil {
			return nil
		}
		out = append(out, tool.FileDiff{Path: *d.Path, OldText: d.OldText, NewText: *d.NewText})
	}
	return out
}

// envelope is the frame of read and write results: the resolved path, then
// the body.
func envelope(path, body string) string {
	return "<path>" + path + "</path>\n<type>file</type>\n<content>\n" + body + "\n</content>"
}
