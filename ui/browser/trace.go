package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/dshq/dsh/internal/redact"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// TraceSession is one session of a trace: its header, a title for people
// (the first prompt, say) and its events.
type TraceSession struct {
	Header session.Header
	Title  string
	Events []session.Event
}

// TraceOptions shape a trace.
type TraceOptions struct {
	// OmitToolOutput leaves out what tools returned (command output, file
	// contents, fetched pages); calls, arguments and diffs stay.
	OmitToolOutput bool
	// MaxOutputBytes caps each tool output in the trace (its head and tail
	// are kept, with a note of what was left out); 0 is DefaultMaxOutput,
	// negative keeps everything.
	MaxOutputBytes int
	// Scrubber removes secrets from every string of the trace; nil uses
	// the built-in credential shapes only.
	Scrubber *redact.Scrubber
	// Version is dsh's version, recorded in the page.
	Version string
	// Now is when the trace was made.
	Now time.Time
}

// DefaultMaxOutput is the default cap on one tool output in a trace: a
// trace is for reading, and a 200-step session of reads and test runs
// stays a file one can mail (about 1.8 MB for 200 steps of mostly
// whole-file reads).
const DefaultMaxOutput = 8 << 10

// maxArgument caps one string inside a tool call's arguments (a written
// file's whole content, say) when the arguments are large.
const maxArgument = 16 << 10

type traceSession struct {
	Header session.Header  `json:"header"`
	Title  string          `json:"title,omitempty"`
	Events []session.Event `json:"events"`
}

type priceRow struct {
	Prefix     string  `json:"prefix"`
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

type traceData struct {
	Session     traceSession   `json:"session"`
	Children    []traceSession `json:"children"`
	Prices      []priceRow     `json:"prices"`
	OmitOutputs bool           `json:"omitOutputs,omitempty"`
	Generated   int64          `json:"generated"`
	Version     string         `json:"version,omitempty"`
}

// Prices is the price table as the pages read it.
func prices() []priceRow {
	var out []priceRow
	for _, e := range pricing.Builtin() {
		out = append(out, priceRow{Prefix: e.Prefix, Input: e.Price.Input, Output: e.Price.Output, CacheRead: e.Price.CacheRead, CacheWrite: e.Price.CacheWrite})
	}
	return out
}

// WriteTrace writes a session (and its subagents' sessions, nested under
// the calls that started them) as one self-contained HTML page: styles,
// scripts and data inline, a Content-Security-Policy that allows no
// connection, secrets scrubbed.
func WriteTrace(w io.Writer, root TraceSession, children []TraceSession, o TraceOptions) error {
	if o.MaxOutputBytes == 0 {
		o.MaxOutputBytes = DefaultMaxOutput
	}
	if o.Scrubber == nil {
		o.Scrubber = redact.New()
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	data := traceData{Prices: prices(), OmitOutputs: o.OmitToolOutput, Generated: o.Now.UnixMilli(), Version: o.Version, Children: []traceSession{}}
	var err error
	if data.Session, err = prepare(root, o); err != nil {
		return err
	}
	for _, c := range children {
		s, err := prepare(c, o)
		if err != nil {
			return err
		}
		data.Children = append(data.Children, s)
	}
	js, err := json.Marshal(data) // escapes <, > and &: the JSON cannot end its script element
	if err != nil {
		return fmt.Errorf("browser: encoding the trace: %w", err)
	}
	title := data.Session.Title
	if title == "" {
		title = string(root.Header.ID)
	}
	css, script := styleCSS(), traceJS()
	var b bytes.Buffer
	b.Grow(len(js) + len(css) + len(script) + 4096)
	b.WriteString("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString(`<meta name="viewport" content="width=device-width, initial-scale=1">` + "\n")
	b.WriteString(`<meta http-equiv="Content-Security-Policy" content="` + TraceCSP(css, script) + `">` + "\n")
	b.WriteString(`<meta name="referrer" content="no-referrer">` + "\n")
	b.WriteString(`<meta name="generator" content="dsh ` + html.EscapeString(o.Version) + `">` + "\n")
	b.WriteString("<title>" + html.EscapeString(o.Scrubber.String(title)) + " · dsh trace</title>\n")
	b.WriteString("<style>" + css + "</style>\n</head>\n")
	b.WriteString(`<body class="trace-page">
<header class="topbar"><span class="brand">dsh<span class="dot">·</span>trace</span><span class="spacer"></span>` +
		`<button id="usage-toggle" class="btn" type="button" aria-expanded="false" aria-controls="usage-panel" title="Usage (u)">Usage</button>` +
		`<button id="theme-toggle" class="icon-btn" type="button"></button></header>
<div id="trace-head" class="trace-head"></div>
<main id="trace"><noscript><p>This trace needs JavaScript to show the session; its data is in the page source.</p></noscript></main>
<aside id="usage-panel" class="panel" hidden aria-label="Usage"><div class="panel-head"><h2>Usage</h2><button class="icon-btn panel-close" type="button" aria-label="Close usage">✕</button></div><div class="panel-body" tabindex="-1"></div></aside>
`)
	b.WriteString(`<script type="application/json" id="dsh-trace">`)
	b.Write(js)
	b.WriteString("</script>\n<script>" + script + "</script>\n</body>\n</html>\n")
	_, err = w.Write(b.Bytes())
	return err
}

// TraceCSP is the trace page's policy: its one style and one script by
// hash, images only as data: URLs, nothing else — no connection, no frame,
// no form, no base URL — and Trusted Types with no policy, so no string can
// become HTML.
func TraceCSP(css, script string) string {
	return "default-src 'none'; script-src " + hash(script) + "; style-src " + hash(css) +
		"; img-src data:; base-uri 'none'; form-action 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
}

// prepare filters, clips and scrubs one session for the page.
func prepare(s TraceSession, o TraceOptions) (traceSession, error) {
	final := map[[2]int]bool{}
	for _, e := range s.Events {
		if e.Type == session.TypeAssistantMessage {
			var m struct{ Turn, Step int }
			if json.Unmarshal(e.Data, &m) == nil {
				final[[2]int{m.Turn, m.Step}] = true
			}
		}
	}
	out := traceSession{Header: s.Header, Title: o.Scrubber.String(s.Title), Events: make([]session.Event, 0, len(s.Events))}
	out.Header.Cwd = o.Scrubber.String(out.Header.Cwd)
	for _, e := range s.Events {
		switch e.Type {
		case session.TypeAssistantChunk:
			// The message holds the streamed text; only a step that never
			// finished (a crash) keeps its chunks.
			var m struct{ Turn, Step int }
			if json.Unmarshal(e.Data, &m) == nil && final[[2]int{m.Turn, m.Step}] {
				continue
			}
		case "hook/invoked":
			continue
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(e.Data))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return traceSession{}, fmt.Errorf("browser: session %s event %d (%s): %w", s.Header.ID, e.Seq, e.Type, err)
		}
		v = shape(e.Type, v, o)
		v = scrub(v, o.Scrubber)
		b, err := json.Marshal(v)
		if err != nil {
			return traceSession{}, fmt.Errorf("browser: session %s event %d: %w", s.Header.ID, e.Seq, err)
		}
		out.Events = append(out.Events, session.Event{Type: e.Type, Seq: e.Seq, Time: e.Time, Data: b})
	}
	return out, nil
}

// shape removes what a reader cannot use (provider signatures, duplicate
// diff forms) and caps what would make the page heavy.
func shape(typ string, v any, o TraceOptions) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	switch typ {
	case session.TypeAssistantMessage:
		if blocks, ok := m["content"].([]any); ok {
			for _, b := range blocks {
				if bm, ok := b.(map[string]any); ok {
					delete(bm, "signature")
					if r, ok := bm["redacted"].(string); ok && r != "" {
						bm["redacted"] = "1"
					}
				}
			}
		}
	case session.TypeToolCall:
		for _, k := range []string{"arguments", "originalArguments"} {
			if s, ok := m[k].(string); ok {
				m[k] = arguments(s, o.Scrubber)
			}
		}
	case session.TypeToolResult:
		if meta, ok := m["meta"].(map[string]any); ok {
			if u, ok := meta["unified"].(string); ok {
				delete(meta, "diffs")
				if len(u) > 256<<10 {
					delete(meta, "unified")
					meta["diffLeftOut"] = len(u)
				}
			}
		}
		blocks, _ := m["content"].([]any)
		total := 0
		for _, b := range blocks {
			if bm, ok := b.(map[string]any); ok {
				if t, ok := bm["text"].(string); ok {
					total += len(t)
				}
			}
		}
		if o.OmitToolOutput {
			m["content"] = []any{}
			m["omitted"] = map[string]any{"bytes": total}
			return m
		}
		if o.MaxOutputBytes > 0 && total > o.MaxOutputBytes {
			budget := o.MaxOutputBytes
			for _, b := range blocks {
				bm, ok := b.(map[string]any)
				if !ok {
					continue
				}
				t, ok := bm["text"].(string)
				if !ok {
					continue
				}
				keep := min(len(t), max(budget, 256))
				bm["text"] = clip(t, keep)
				budget -= keep
			}
			m["clipped"] = map[string]any{"bytes": total}
		}
	}
	return m
}

// clip keeps the head and the tail of s within about n bytes, on rune
// boundaries, with a line saying how much was left out.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*3/4, n/4
	for head > 0 && !runeStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !runeStart(s[t]) {
		t++
	}
	return s[:head] + fmt.Sprintf("\n… %d bytes left out of this trace …\n", t-head) + s[t:]
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// arguments scrubs a call's JSON arguments value by value (so a
// replacement can never break the JSON the view reads the path and command
// from) and, when they are large, caps their long strings.
func arguments(s string, sc *redact.Scrubber) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return clip(s, 4*maxArgument)
	}
	if obj, ok := v.(map[string]any); ok && len(s) > 4*maxArgument {
		for k, x := range obj {
			if str, ok := x.(string); ok && len(str) > maxArgument {
				obj[k] = clip(str, maxArgument)
			}
		}
	}
	b, err := json.Marshal(scrub(v, sc))
	if err != nil {
		return clip(s, 4*maxArgument)
	}
	return string(b)
}

// scrub redacts every string of a decoded JSON value, keys included.
func scrub(v any, s *redact.Scrubber) any {
	switch x := v.(type) {
	case string:
		return s.String(x)
	case []any:
		for i := range x {
			x[i] = scrub(x[i], s)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[s.String(k)] = scrub(val, s)
		}
		return out
	}
	return v
}

// Reader is what a trace is read from: a session store's coordinator.
type Reader interface {
	Read(ctx context.Context, id session.ID) (session.Header, []session.Event, error)
	List(ctx context.Context, q store.Query) ([]store.Info, error)
}

// ReadTrace reads a session and, recursively, its subagents' sessions
// (those whose lineage names it), as [WriteTrace] takes them. A child's
// events start after its seed (the history it was started with).
func ReadTrace(ctx context.Context, r Reader, id session.ID) (TraceSession, []TraceSession, error) {
	h, events, err := r.Read(ctx, id)
	if err != nil {
		return TraceSession{}, nil, fmt.Errorf("browser: reading session %s: %w", id, err)
	}
	root := TraceSession{Header: h, Events: events, Title: Title(events)}
	infos, err := r.List(ctx, store.Query{})
	if err != nil {
		return TraceSession{}, nil, fmt.Errorf("browser: listing sessions: %w", err)
	}
	var kids []TraceSession
	seen := map[session.ID]bool{id: true}
	var walk func(parent session.ID) error
	walk = func(parent session.ID) error {
		for _, in := range infos {
			if in.Header.ParentSession != parent || seen[in.Header.ID] {
				continue
			}
			seen[in.Header.ID] = true
			ch, ev, err := r.Read(ctx, in.Header.ID)
			if err != nil {
				return fmt.Errorf("browser: reading subagent session %s: %w", in.Header.ID, err)
			}
			ev = ev[min(ch.SeedLength, len(ev)):]
			kids = append(kids, TraceSession{Header: ch, Events: ev, Title: Title(ev)})
			if err := walk(in.Header.ID); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(id); err != nil {
		return TraceSession{}, nil, err
	}
	return root, kids, nil
}

// Title is a session's title for people: the first line of its first
// prompt, cut at 80 bytes.
func Title(events []session.Event) string {
	for _, e := range events {
		if e.Type != session.TypeUserMessage {
			continue
		}
		m, err := session.Decode[session.Prompt](e)
		if err != nil {
			continue
		}
		t := strings.TrimSpace(llm.TextOf(m.Content))
		if i := strings.IndexByte(t, '\n'); i >= 0 {
			t = t[:i]
		}
		if len(t) > 80 {
			i := 80
			for i > 0 && !runeStart(t[i]) {
				i--
			}
			t = t[:i] + "…"
		}
		return t
	}
	return ""
}
