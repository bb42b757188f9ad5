package term

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// CardState is where a tool call is.
type CardState int

// Card states.
const (
	CardRunning CardState = iota
	CardWaiting           // an approval question is open
	CardDone
	CardFailed
)

// Card is everything the terminal shows of one tool call.
type Card struct {
	ID   llm.CallID
	Name string
	Args string
	Kind tool.Kind
	// Call and Result are the tool's presenter views (nil when the tool has
	// no presenter or declined the arguments).
	Call, Result *tool.View
	// Text is the result the model read; Meta the tool's presentation data.
	Text    string
	IsError bool
	Meta    json.RawMessage
	State   CardState
	// Start and End are event times (epoch ms).
	Start, End int64
	// Note is a line under the header (an approval outcome).
	Note string
	// NoResult marks a call whose turn ended before it reported.
	NoResult bool
	// Children are the subagent sessions the call started (task, fork);
	// NestedCalls counts the tool calls they made, shown once it is done.
	Children    []session.ID
	NestedCalls int
}

// Card body limits.
const (
	outputTail = 8
	diffLimit  = 16
	errorLines = 6
	textLines  = 3
)

// RenderCard draws a card as rows no wider than width. now is used for a
// running card's elapsed time; frame is its spinner glyph.
func RenderCard(c *Card, width int, now int64, frame string, st Styles) []string {
	if width < 20 {
		width = 20
	}
	var status string
	icon := st.OK("●")
	switch c.State {
	case CardRunning:
		icon = st.Accent(frame)
		status = st.Dim("running " + fmtDur(now-c.Start))
	case CardWaiting:
		icon = st.Warn("?")
		status = st.Warn("awaiting approval")
	case CardDone:
		status = st.Dim(fmtDur(c.End - c.Start))
	case CardFailed:
		icon = st.Err("●")
		status = st.Err("failed") + st.Dim(" · "+fmtDur(c.End-c.Start))
	}
	title := cardTitle(c, st)
	room := width - 2 - ansi.StringWidth(status) - 3
	if room < 10 {
		room = 10
	}
	head := icon + " " + ansi.Truncate(title, room, "…") + st.Dim(" · ") + status
	rows := []string{ansi.Truncate(head, width, "…")}
	var body []string
	if c.Note != "" {
		body = append(body, st.Warn(c.Note))
	}
	if c.NestedCalls > 0 && c.State != CardRunning && c.State != CardWaiting {
		calls := "tool calls"
		if c.NestedCalls == 1 {
			calls = "tool call"
		}
		body = append(body, st.Dim(fmt.Sprintf("↳ subagent made %d %s", c.NestedCalls, calls)))
	}
	if (c.State == CardDone || c.State == CardFailed) && !c.NoResult {
		body = append(body, cardBody(c, st)...)
	}
	for i, l := range body {
		prefix := "    "
		if i == 0 {
			prefix = st.Dim("  ⎿ ")
		}
		rows = append(rows, ansi.Truncate(prefix+l, width, "…"))
	}
	return rows
}

// cardTitle is the one-line summary of the call.
func cardTitle(c *Card, st Styles) string {
	v := c.Call
	if v == nil {
		v = c.Result
	}
	switch {
	case v != nil && v.Command != "":
		t := st.Bold(label(c.Name)) + " " + firstLine(v.Command)
		if c.Call != nil && c.Call.Text != "" {
			t += st.Dim(" · " + firstLine(c.Call.Text))
		}
		return t
	case v != nil && v.Title != "":
		head, rest, _ := strings.Cut(firstLine(v.Title), " ")
		if rest == "" {
			return st.Bold(head)
		}
		return st.Bold(head) + " " + rest
	}
	return st.Bold(label(c.Name)) + " " + st.Dim(compactArgs(c.Args))
}

// label capitalises a tool name for a card: "bash" → "Bash".
func label(name string) string {
	if name == "" {
		return "tool"
	}
	r := []rune(sanitizeStrict(name))
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// compactArgs renders arguments on one line: the values of a JSON object
// joined by spaces ("path=a.go limit=20"), or the raw text.
func compactArgs(raw string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &obj) != nil || len(obj) == 0 {
		return firstLine(strings.TrimSpace(sanitizeStrict(raw)))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		var s string
		if json.Unmarshal(obj[k], &s) != nil {
			s = string(obj[k])
		}
		parts = append(parts, sanitizeStrict(k)+"="+firstLine(sanitizeStrict(s)))
	}
	return strings.Join(parts, " ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// cardBody renders a finished call: a diff, a command's output tail, an
// error, or a short summary of the result text.
func cardBody(c *Card, st Styles) []string {
	v := c.Result
	// Errors first: what the model read is the most useful thing to show.
	if c.IsError {
		text := c.Text
		if v != nil && v.Text != "" {
			text = stripFence(v.Text)
		}
		return headLines(strings.TrimSpace(text), errorLines, st.Err, st)
	}
	// Diffs: the unified diff the tool recorded, else the view's diffs.
	if u := metaUnified(c.Meta); u != "" {
		if ls := unifiedLines(u); len(ls) > 0 {
			return renderDiff(ls, diffLimit, st)
		}
	}
	if v != nil && len(v.Diffs) > 0 {
		var ls []diffLine
		for i, d := range v.Diffs {
			if i > 0 {
				ls = append(ls, diffLine{Kind: '@', Text: "⋮"})
			}
			ls = append(ls, fileDiffLines(d)...)
		}
		return renderDiff(ls, diffLimit, st)
	}
	// Commands: the tail of the output and a failing exit status.
	if v != nil && (v.Command != "" || v.Output != "") {
		out := tailLines(strings.TrimRight(v.Output, "\n"), outputTail, st)
		if v.ExitCode != nil && *v.ExitCode != 0 {
			out = append(out, st.Err(fmt.Sprintf("exit code %d", *v.ExitCode)))
		}
		if v.Text != "" {
			out = append(out, st.Err(v.Text))
		}
		return out
	}
	if v != nil && v.Text != "" {
		return headLines(stripFence(v.Text), textLines, func(s string) string { return s }, st)
	}
	text := strings.TrimRight(c.Text, "\n")
	switch c.Kind {
	case tool.KindExecute:
		return tailLines(text, outputTail, st)
	case tool.KindRead:
		n := strings.Count(text, "\n") + 1
		if text == "" {
			n = 0
		}
		return []string{st.Dim(fmt.Sprintf("%d lines", n))}
	}
	return headLines(text, textLines, func(s string) string { return s }, st)
}

// tailLines keeps the last n lines, noting how many were hidden.
func tailLines(s string, n int, st Styles) []string {
	if s == "" {
		return []string{st.Dim("(no output)")}
	}
	ls := strings.Split(s, "\n")
	var out []string
	if len(ls) > n {
		out = append(out, st.Dim(fmt.Sprintf("… +%d lines", len(ls)-n)))
		ls = ls[len(ls)-n:]
	}
	for _, l := range ls {
		out = append(out, strings.ReplaceAll(l, "\t", "    "))
	}
	return out
}

// headLines keeps the first n lines, noting how many were hidden.
func headLines(s string, n int, p func(string) string, st Styles) []string {
	if s == "" {
		return nil
	}
	ls := strings.Split(s, "\n")
	var out []string
	for i, l := range ls {
		if i == n {
			out = append(out, st.Dim(fmt.Sprintf("… +%d lines", len(ls)-n)))
			break
		}
		out = append(out, p(strings.ReplaceAll(l, "\t", "    ")))
	}
	return out
}

// stripFence removes a Markdown code fence around a view's text.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") {
		return s
	}
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	} else {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(t, "\n"), "```")
}

// fmtDur formats milliseconds: "0.4s", "12s", "3m05s".
func fmtDur(ms int64) string {
	if ms < 0 {
		ms = 0
	}
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
