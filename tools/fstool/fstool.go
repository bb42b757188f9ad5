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
	// Confirm, when set, is asked about the file a call names once it is
	// opened (read) or just before it changes (write, edit), with the key
	// the tool resolved and the identity of the file: an error refuses
	// the call, and is what the model reads. The app sets it to the
	// permission checker's (permission.Checker.ConfirmFile), so that the
	// file the permission layer decided on is the file the tool uses.
	Confirm func(ctx context.Context, call tool.Call, key string, id fs.FileID) error
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

// confirmChange confirms the file a write or edit is about to change (see
// Options.Confirm) and returns the precondition to change it with: the
// caller's read-before-write guard, and that the file is still the one
// confirmed (not replaced by another, a hard link say, meanwhile).
func (e *env) confirmChange(ctx context.Context, call tool.Call, tg fs.Target) (fs.Precondition, error) {
	pre := e.guard(call, tg)
	if e.o.Confirm == nil {
		return pre, nil
	}
	info, err := e.p.Stat(ctx, tg)
	if err != nil {
		return nil, err
	}
	var id fs.FileID
	var inode uint64
	if info != nil {
		id, inode = info.ID, info.Version.Inode
	}
	if err := e.o.Confirm(ctx, call, tg.Key, id); err != nil {
		return nil, err
	}
	existed := info != nil
	return func(cur *fs.Version) error {
		if (cur != nil) != existed || cur != nil && cur.Inode != inode {
			return fs.Errorf(fs.CodeStale, "policy", tg.Path,
				"cannot change %q: it was replaced while its permission was being checked; retry", tg.Path)
		}
		if pre != nil {
			return pre(cur)
		}
		return nil
	}, nil
}

// precheckChange is the precheck of write and edit: the path resolves
// (inside the provider's roots), and the read-before-write policy would
// let the caller change the file as it is now. mustExist is set for edit.
func (e *env) precheckChange(ctx context.Context, call tool.Call, path string, mustExist bool) error {
	tg, err := e.resolve(ctx, call, path)
	if err != nil {
		return err
	}
	info, err := e.p.Stat(ctx, tg)
	if err != nil {
		return nil // the tool reports it when it runs
	}
	if info == nil {
		if mustExist {
			return fs.Errorf(fs.CodeNotFound, "edit", tg.Path, "cannot edit %q: the file does not exist; use write to create it", tg.Path)
		}
		return nil
	}
	if e.t == nil {
		return nil
	}
	return e.t.CheckWrite(owner(call), tg, &info.Version)
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
