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
	// Start and End are event times (epoch ms): the call, and its result.
	// Asked is when an approval question about it was put and Ran when it
	// started running (its approval, or Start when it asked nobody); 0
	// until then. The card's time counts from Ran, so waiting for the user
	// is not charged to the command.
	Start, End, Asked, Ran int64
	// Tail is the output of a running call so far (nil until it prints).
	Tail *OutputTail
	// Expanded cards show their whole body instead of its head or tail.
	Expanded bool
	// Denied marks a call a person refused to approve; Reason is theirs.
	Denied bool
	Reason string
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

// ran is when the call started running (see [Card.Ran]).
func (c *Card) ran() int64 {
	if c.Ran > 0 {
		return c.Ran
	}
	return c.Start
}

// waited is how long the call waited for its approval (ms), 0 when it
// asked nobody.
func (c *Card) waited() int64 {
	if c.Asked == 0 || c.Ran < c.Asked {
		return 0
	}
	return c.Ran - c.Asked
}

// RenderCard draws a card as rows no wider than width. now is used for a
// running card's elapsed time; frame is its spinner glyph. An expanded
// card shows its whole body.
func RenderCard(c *Card, width int, now int64, frame string, st Styles) []string {
	if width < 20 {
		width = 20
	}
	var status string
	icon := st.OK("●")
	waited := ""
	if w := c.waited(); w >= 1000 {
		waited = st.Dim(" · waited " + fmtDur(w) + " for approval")
	}
	switch c.State {
	case CardRunning:
		icon = st.Accent(frame)
		status = st.Dim("running "+fmtDur(now-c.ran())) + waited
	case CardWaiting:
		icon = st.Warn("?")
		status = st.Warn("awaiting approval")
		if c.Asked > 0 {
			status += st.Dim(" " + fmtDur(now-c.Asked))
		}
	case CardDone:
		status = st.Dim(fmtDur(c.End-c.ran())) + waited
	case CardFailed:
		icon = st.Err("●")
		status = st.Err("failed") + st.Dim(" · "+fmtDur(c.End-c.ran())) + waited
	}
	if c.Denied && (c.State == CardDone || c.State == CardFailed) {
		icon, status = st.Warn("●"), st.Warn("Denied")
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
	switch {
	case c.Denied:
		// What the user said is the whole story: the tool never ran.
		if c.Reason != "" {
			body = append(body, st.Dim("reason: ")+c.Reason)
		}
	case (c.State == CardDone || c.State == CardFailed) && !c.NoResult:
		body = append(body, cardBody(c, st, c.Expanded)...)
	case c.State == CardRunning && !c.Tail.Empty():
		body = append(body, liveOutput(c, st)...)
	}
	for i, l := range body {
		prefix := "    "
		if i == 0 {
			prefix = st.Dim("  ⎿ ")
		}
		if !c.Expanded {
			rows = append(rows, ansi.Truncate(prefix+l, width, "…"))
			continue
		}
		// Expanded: nothing is cut, long lines wrap.
		for j, w := range wrapLines(l, width-4) {
			if j > 0 {
				prefix = "    "
			}
			rows = append(rows, prefix+w)
		}
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

// liveOutput is the end of a running call's output: a few lines, or
// every line kept when the card is expanded.
func liveOutput(c *Card, st Styles) []string {
	n := liveTailRows
	if c.Expanded {
		n = 0
	}
	ls, hidden := c.Tail.Lines(n)
	var out []string
	if hidden > 0 {
		out = append(out, st.Dim(fmt.Sprintf("… +%d %s", hidden, plural(hidden, "line", "lines"))))
	}
	for _, l := range ls {
		out = append(out, strings.ReplaceAll(l, "\t", "    "))
	}
	return out
}

// expandHint follows a collapsed card's count of hidden lines.
const expandHint = "(ctrl-o to expand)"

// unlimited is the line limit of an expanded card's body.
const unlimited = 1 << 30

// cardBody renders a finished call: a diff, a command's output tail, an
// error, or a short summary of the result text; all of it when full.
func cardBody(c *Card, st Styles, full bool) []string {
	lim := func(n int) int {
		if full {
			return unlimited
		}
		return n
	}
	v := c.Result
	// Errors first: what the model read is the most useful thing to show.
	if c.IsError {
		text := c.Text
		if v != nil && v.Text != "" {
			text = stripFence(v.Text)
		}
		return headLines(strings.TrimSpace(text), lim(errorLines), st.Err, st)
	}
	// Diffs: the unified diff the tool recorded, else the view's diffs.
	if u := metaUnified(c.Meta); u != "" {
		if ls := unifiedLines(u); len(ls) > 0 {
			return renderDiff(ls, lim(diffLimit), st)
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
		return renderDiff(ls, lim(diffLimit), st)
	}
	// Commands: the tail of the output and a failing exit status.
	if v != nil && (v.Command != "" || v.Output != "") {
		out := tailLines(strings.TrimRight(v.Output, "\n"), lim(outputTail), st)
		if v.ExitCode != nil && *v.ExitCode != 0 {
			out = append(out, st.Err(fmt.Sprintf("exit code %d", *v.ExitCode)))
		}
		if v.Text != "" {
			out = append(out, st.Err(v.Text))
		}
		return out
	}
	if v != nil && v.Text != "" {
		return headLines(stripFence(v.Text), lim(textLines), func(s string) string { return s }, st)
	}
	text := strings.TrimRight(c.Text, "\n")
	switch {
	case c.Kind == tool.KindExecute:
		return tailLines(text, lim(outputTail), st)
	case full:
		return headLines(text, unlimited, func(s string) string { return s }, st)
	case c.Kind == tool.KindRead:
		n := readLines(text)
		return []string{st.Dim(fmt.Sprintf("%d %s", n, plural(n, "line", "lines")))}
	}
	return headLines(text, lim(textLines), func(s string) string { return s }, st)
}

// readLines counts the lines a read result holds: the numbered lines of
// the read tool's cat -n window when there are any (its path header and
// footer are not the file's), else every line.
func readLines(text string) int {
	if text == "" {
		return 0
	}
	all, numbered := strings.Split(text, "\n"), 0
	for _, l := range all {
		if d, _, ok := strings.Cut(strings.TrimLeft(l, " "), "\t"); ok && d != "" && strings.Trim(d, "0123456789") == "" {
			numbered++
		}
	}
	if numbered > 0 {
		return numbered
	}
	return len(all)
}

// tailLines keeps the last n lines, noting how many were hidden.
func tailLines(s string, n int, st Styles) []string {
	if s == "" {
		return []string{st.Dim("(no output)")}
	}
	ls := strings.Split(s, "\n")
	var out []string
	if len(ls) > n {
		out = append(out, st.Dim(fmt.Sprintf("… +%d %s %s", len(ls)-n, plural(len(ls)-n, "line", "lines"), expandHint)))
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
			out = append(out, st.Dim(fmt.Sprintf("… +%d %s %s", len(ls)-n, plural(len(ls)-n, "line", "lines"), expandHint)))
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
