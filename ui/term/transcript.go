package term

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/todo"
)

// ToolLookup finds a registered tool (for its presenters and kind).
type ToolLookup func(name string) (tool.Tool, bool)

// TodoType is the event type of todo list updates.
const TodoType = todo.EventTodoWrite

// Transcript turns one session's events into terminal output. Finished
// things (prompts, rendered answers, tool cards, todo lists, turn footers)
// are committed: they go to the scrollback once and never change; [Take]
// drains them. Things in progress (streaming text, running tools) are the
// live part, redrawn in place from [Live]. It is a pure consumer of session
// events and safe for use by one goroutine.
type Transcript struct {
	st    Styles
	md    *markdown
	tools ToolLookup
	width func() int

	// ShowThinking prints reasoning in full instead of collapsed.
	ShowThinking bool

	out   strings.Builder
	wrote bool
	// keep records what is committed as entries (the transcript view's
	// copy; the live one only writes rows).
	keep bool
	kept []viewEntry

	// The streaming step. split finds the complete Markdown blocks of
	// text; the first shown bytes of it are committed already (and the
	// reasoning before them, when thoughtShown).
	text         strings.Builder
	split        blockSplitter
	shown        int
	thoughtShown bool
	reasoning    strings.Builder
	preparing    map[int]*prepCall
	prepOrder    []int

	// Tool calls not finished yet, in call order.
	cards []*Card

	// Subagent activity under running task cards, by the direct child
	// session; childDone marks children whose card completed.
	nested    map[session.ID]*nestedRun
	childDone map[session.ID]bool

	compacting bool
	// LastCompactError is the newest compaction failure shown.
	LastCompactError string
	compactTurn      bool

	// The turn.
	turnOpen  bool
	turnStart int64
	steps     int
	turnUsage llm.Usage
	usageSeen bool

	// Totals and the latest figures, for the status line; ledger prices
	// the usage by model.
	ledger        *ledger
	Total         llm.Usage
	LastTurnUsage llm.Usage
	// contextUsed is the size of the conversation as the model last saw
	// it (the last step's prompt and answer), or a compaction's estimate.
	contextUsed   int
	Turns         int
	Model         string
	LastReasoning string
}

type prepCall struct {
	name string
	args int
}

// NewTranscript returns a renderer. width is read at each render; tools may
// be nil.
func NewTranscript(st Styles, md *markdown, tools ToolLookup, width func() int) *Transcript {
	if tools == nil {
		tools = func(string) (tool.Tool, bool) { return nil, false }
	}
	if width == nil {
		width = func() int { return 80 }
	}
	return &Transcript{st: st, md: md, tools: tools, width: width, preparing: map[int]*prepCall{}, ledger: newLedger(nil),
		nested: map[session.ID]*nestedRun{}, childDone: map[session.ID]bool{}}
}

// Take returns the committed output since the last call ("\n"-separated
// rows ending in a newline, or "").
func (t *Transcript) Take() string {
	s := t.out.String()
	t.out.Reset()
	return s
}

// ContextUsed is the conversation's size in tokens as the model last saw
// it: the last step's prompt plus its answer, or after a compaction the
// compactor's estimate; 0 before the first answer.
func (t *Transcript) ContextUsed() int { return t.contextUsed }

// Busy reports whether a turn is open.
func (t *Transcript) Busy() bool { return t.turnOpen }

// Note commits UI text (command output, notices) as its own block,
// word-wrapped to the width.
func (t *Transcript) Note(s string) { t.block(s) }

// block commits rows, separated from the previous block by a blank line.
func (t *Transcript) block(s string) {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return
	}
	if t.wrote {
		t.out.WriteByte('\n')
	}
	// Rows wider than the terminal are wrapped here, keeping their
	// indentation, rather than by the terminal at column 0.
	rows := strings.Join(wrapLines(s, t.width()), "\n")
	if t.keep {
		t.kept = append(t.kept, viewEntry{text: rows})
	}
	t.out.WriteString(rows)
	t.out.WriteByte('\n')
	t.wrote = true
}

// Apply renders one event.
func (t *Transcript) Apply(e session.Event) {
	switch e.Type {
	case session.TypeTurnStart:
		t.flushStream()
		t.turnOpen, t.turnStart, t.steps = true, e.Time, 0
		ts, _ := session.Decode[session.TurnStart](e)
		t.compactTurn = ts.Trigger.Kind == "compact"
		t.turnUsage, t.usageSeen = llm.Usage{}, false
		if ts.Trigger.Kind != session.TriggerInjection {
			t.Turns++ // context added between turns is not one of the user's
		}
	case session.TypeStepStart:
		t.flushStream()
		t.steps++
	case session.TypeUserMessage, session.TypeSteeringMessage:
		p, err := session.Decode[session.Prompt](e)
		if err != nil {
			return
		}
		if p.Source.OrUser().Kind != llm.SourceUser {
			return // plugin or agent input: context, not the user's words
		}
		suffix := ""
		if e.Type == session.TypeSteeringMessage {
			suffix = t.st.Dim("  (steering)")
		}
		typed, notes := splitMentions(p.Content)
		text := strings.TrimSpace(sanitize(llm.TextOf(typed)))
		for _, n := range notes {
			suffix += "\n" + t.st.Dim("  ⎿ "+sanitize(n))
		}
		if p.Source.Command != "" {
			// A slash command: the line the user typed, not its expansion.
			lines := strings.Count(text, "\n") + 1
			text = sanitize(p.Source.Command)
			suffix += t.st.Dim(fmt.Sprintf("  (expanded to %d %s)", lines, plural(lines, "line", "lines")))
		}
		t.block(t.prefixed(text, t.st.User("› "), "  ") + suffix)
	case session.TypeContextMessage:
		if p, err := session.Decode[session.Prompt](e); err == nil {
			t.shellContext(p)
		}
	case session.TypePromptBlocked:
		p, err := session.Decode[session.PromptBlocked](e)
		if err != nil {
			return
		}
		t.block(t.st.Warn("✗ prompt blocked: " + sanitize(p.Reason)))
	case session.TypeAssistantChunk:
		c, err := session.Decode[session.AssistantChunk](e)
		if err == nil {
			t.chunk(c.Chunk)
		}
	case session.TypeAssistantMessage:
		m, err := session.Decode[session.AssistantMessage](e)
		if err != nil {
			return
		}
		streamed := streamedPart{text: t.text.String()[:t.shown], thought: t.thoughtShown}
		t.clearStream()
		t.message(m, streamed)
	case session.TypeToolCall:
		c, err := session.Decode[session.ToolCall](e)
		if err != nil {
			return
		}
		t.flushStream()
		t.cards = append(t.cards, t.newCard(c, e.Time))
	case session.TypeApprovalRequest:
		r, err := session.Decode[session.ApprovalRequest](e)
		if err != nil {
			return
		}
		if c := t.card(r.CallID); c != nil {
			c.State, c.Asked = CardWaiting, e.Time
		}
	case session.TypeApprovalAnswer:
		a, err := session.Decode[session.ApprovalAnswer](e)
		if err != nil {
			return
		}
		if c := t.card(a.CallID); c != nil {
			c.State, c.Ran = CardRunning, e.Time
			switch {
			case !a.Allow && a.By == "user":
				c.Note, c.Denied, c.Reason = "denied by you", true, sanitize(a.Reason)
			case !a.Allow && tool.Denied(tool.Approval{By: a.By}):
				c.Note, c.Denied, c.Reason = "denied by "+sanitize(a.By), true, sanitize(a.Reason)
			case !a.Allow:
				c.Note = "not approved"
			case a.Scope == "session":
				c.Note = "allowed for this session"
			}
		}
	case session.TypeToolResult:
		r, err := session.Decode[session.ToolResult](e)
		if err != nil {
			return
		}
		t.result(r, e.Time)
	case TodoType:
		t.todos(e.Data)
	case subagent.TypeStart:
		t.childStarted(e)
	case compact.TypeStart:
		t.compacting = true
	case compact.TypeEnd:
		t.compacting = false
		end, err := session.Decode[compact.End](e)
		switch {
		case err != nil:
		case end.Error != "":
			t.LastCompactError = sanitize(end.Error)
			t.block(t.st.Warn("✻ Compaction failed: " + t.LastCompactError))
		case end.Before > 0:
			t.contextUsed = end.After
			t.block(t.st.Dim(fmt.Sprintf("✻ Conversation compacted: ~%s → ~%s tokens", fmtTokens(end.Before), fmtTokens(end.After))))
		default:
			t.block(t.st.Dim("✻ Conversation compacted"))
		}
	case session.TypeTurnEnd:
		te, err := session.Decode[session.TurnEnd](e)
		if err != nil {
			return
		}
		t.endTurn(te, e.Time)
	}
}

func (t *Transcript) chunk(c llm.Chunk) {
	switch c.Type {
	case llm.ChunkTextDelta:
		t.text.WriteString(sanitize(c.Text))
		t.commitBlocks()
	case llm.ChunkReasoningDelta:
		t.reasoning.WriteString(sanitize(c.Text))
	case llm.ChunkToolCallDelta:
		p := t.preparing[c.Index]
		if p == nil {
			p = &prepCall{}
			t.preparing[c.Index] = p
			t.prepOrder = append(t.prepOrder, c.Index)
		}
		if c.Name != "" {
			p.name = sanitize(c.Name)
		}
		p.args += len(c.ArgsDelta)
	}
}

// commitBlocks commits the streamed answer's complete Markdown blocks
// (see stream.go), after the reasoning that came before them.
func (t *Transcript) commitBlocks() {
	s := t.text.String()
	cut := t.split.scan(s)
	if cut <= t.shown {
		return
	}
	if r := strings.TrimSpace(t.reasoning.String()); r != "" && !t.thoughtShown {
		t.LastReasoning = r
		t.block(t.thinking(r))
		t.thoughtShown = true
	}
	if part := s[t.shown:cut]; strings.TrimSpace(part) != "" {
		t.block(t.md.Render(part, t.width()))
	}
	t.shown = cut
}

func (t *Transcript) clearStream() {
	t.text.Reset()
	t.split, t.shown, t.thoughtShown = blockSplitter{}, 0, false
	t.reasoning.Reset()
	clear(t.preparing)
	t.prepOrder = t.prepOrder[:0]
}

// flushStream commits text streamed by a step that never produced its
// message (it failed or was cancelled), so nothing the user saw vanishes.
func (t *Transcript) flushStream() {
	if r := strings.TrimSpace(t.reasoning.String()); r != "" && t.text.Len() == 0 {
		t.block(t.thinking(r))
	}
	if s := strings.TrimSpace(t.text.String()[t.shown:]); s != "" {
		t.block(t.prefixed(s, "  ", "  ") + "\n" + t.st.Dim("  (incomplete)"))
	} else if t.shown > 0 {
		t.block(t.st.Dim("  (incomplete)"))
	}
	t.clearStream()
}

// streamedPart is what of a message was committed while it streamed: the
// first bytes of its text, and its reasoning.
type streamedPart struct {
	text    string
	thought bool
}

// unshown returns what of a text block is left to show after the streamed
// part, advancing it.
func (p *streamedPart) unshown(text string) string {
	switch {
	case p.text == "":
		return text
	case strings.HasPrefix(p.text, text):
		p.text = p.text[len(text):]
		return ""
	case strings.HasPrefix(text, p.text):
		rest := text[len(p.text):]
		p.text = ""
		return rest
	}
	// The message is not what streamed (an adapter that rewrote it): show
	// it whole rather than lose any of it.
	p.text = ""
	return text
}

func (t *Transcript) message(m session.AssistantMessage, streamed streamedPart) {
	if m.Model != "" {
		t.Model = m.Model
	}
	if m.Usage != nil {
		u := *m.Usage
		t.contextUsed = u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.OutputTokens
		t.turnUsage.Add(*m.Usage)
		t.Total.Add(*m.Usage)
		t.ledger.add(cmpOr(m.Model, t.Model), *m.Usage)
		t.usageSeen = true
	}
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockReasoning:
			if r := strings.TrimSpace(sanitize(b.Text)); r != "" {
				t.LastReasoning = r
				if streamed.thought {
					streamed.thought = false // committed with the first block
					continue
				}
				t.block(t.thinking(r))
			} else if b.Redacted != "" {
				t.block(t.st.Dim("✻ (redacted thinking)"))
			}
		case llm.BlockText:
			if text := streamed.unshown(sanitize(b.Text)); strings.TrimSpace(text) != "" {
				t.block(t.md.Render(text, t.width()))
			}
		}
	}
	if m.Interrupted {
		line := t.st.Dim("  (interrupted: the model sees what it had written so far)")
		t.out.WriteString(line + "\n")
		if t.keep {
			t.kept = append(t.kept, viewEntry{text: line})
		}
	}
}

// thinking renders reasoning: collapsed to its first line, or in full.
func (t *Transcript) thinking(r string) string {
	lines := strings.Split(r, "\n")
	if t.ShowThinking {
		var sb strings.Builder
		sb.WriteString(t.st.Dim("✻ Thinking"))
		for _, l := range wrapLines(r, t.width()-2) {
			sb.WriteString("\n" + t.st.Dim("│ "+l))
		}
		return sb.String()
	}
	more := ""
	if n := len(lines); n > 1 {
		more = fmt.Sprintf(" … (%d lines, /thinking to show)", n)
	}
	first := strings.TrimSpace(lines[0])
	room := max(20, t.width()-2-ansi.StringWidth(more))
	if ansi.StringWidth(first) > room {
		first = ansi.Truncate(first, room, "…")
		if more == "" {
			more = " (/thinking to show)"
		}
	}
	return t.st.Dim(t.st.Italic("✻ " + first + more))
}

func (t *Transcript) newCard(c session.ToolCall, at int64) *Card {
	card := &Card{ID: c.CallID, Name: c.Name, Args: c.Arguments, Start: at, State: CardRunning}
	if tl, ok := t.tools(c.Name); ok {
		card.Kind = tl.Info().Kind
		if p, ok := tl.(tool.CallPresenter); ok && json.Valid([]byte(c.Arguments)) {
			card.Call = sanitizeView(safeView(func() *tool.View { return p.PresentCall(json.RawMessage(c.Arguments)) }))
		}
	}
	return card
}

// safeView runs a presenter, treating a panic as "no view".
func safeView(f func() *tool.View) (v *tool.View) {
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	return f()
}

func (t *Transcript) card(id llm.CallID) *Card {
	for _, c := range t.cards {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (t *Transcript) result(r session.ToolResult, at int64) {
	c := t.card(r.CallID)
	if c == nil { // a result without its call (a repaired log)
		c = &Card{ID: r.CallID, Name: "tool", Start: at}
	} else {
		t.cards = removeCard(t.cards, c)
		t.collapseChildren(c)
	}
	c.End, c.Text, c.IsError, c.Meta = at, sanitize(llm.TextOf(r.Content)), r.IsError, r.Meta
	c.State = CardDone
	if c.IsError {
		c.State = CardFailed
	}
	if tl, ok := t.tools(c.Name); ok {
		if p, ok := tl.(tool.ResultPresenter); ok && json.Valid([]byte(c.Args)) {
			res := tool.Result{Content: r.Content, Meta: r.Meta, IsError: r.IsError}
			c.Result = sanitizeView(safeView(func() *tool.View { return p.PresentResult(json.RawMessage(c.Args), res) }))
		}
	}
	if c.Result != nil && c.Result.ExitCode != nil && *c.Result.ExitCode != 0 {
		c.State = CardFailed
	}
	if c.Name == todo.Name && !c.IsError {
		return // the todo/write checklist already showed it
	}
	t.cardBlock(c, at)
}

// cardBlock commits a finished card (the view keeps the card itself, to
// expand it).
func (t *Transcript) cardBlock(c *Card, at int64) {
	keep := t.keep
	t.keep = false
	t.block(strings.Join(RenderCard(c, t.width(), at, "●", t.st), "\n"))
	t.keep = keep
	if keep {
		t.kept = append(t.kept, viewEntry{card: c})
	}
}

// Output adds output a running call produced (see tool.Progress) to its
// card's tail; output of a call with no running card is dropped.
func (t *Transcript) Output(id llm.CallID, p []byte) {
	c := t.card(id)
	if c == nil || c.State == CardDone || c.State == CardFailed {
		return
	}
	if c.Tail == nil {
		c.Tail = &OutputTail{}
	}
	c.Tail.Write(p)
}

func removeCard(cs []*Card, c *Card) []*Card {
	out := cs[:0]
	for _, x := range cs {
		if x != c {
			out = append(out, x)
		}
	}
	return out
}

func (t *Transcript) todos(data json.RawMessage) {
	var items []session.TodoItem
	var wrapped struct {
		Todos []session.TodoItem `json:"todos"`
	}
	if json.Unmarshal(data, &wrapped) == nil && wrapped.Todos != nil {
		items = wrapped.Todos
	} else if json.Unmarshal(data, &items) != nil {
		return
	}
	t.block(RenderTodos(items, t.st))
}

// RenderTodos draws a todo list as a checklist.
func RenderTodos(items []session.TodoItem, st Styles) string {
	if len(items) == 0 {
		return st.Dim("☰ Todos: (empty)")
	}
	done := 0
	for _, it := range items {
		if it.Status == "completed" {
			done++
		}
	}
	lines := []string{st.Bold("☰ Todos") + st.Dim(fmt.Sprintf(" %d/%d", done, len(items)))}
	for _, it := range items {
		it.Content, it.ActiveForm = sanitize(it.Content), sanitize(it.ActiveForm)
		switch it.Status {
		case "completed":
			lines = append(lines, "  "+st.OK("[x]")+" "+st.Dim(it.Content))
		case "in_progress":
			text := it.Content
			if it.ActiveForm != "" {
				text = it.ActiveForm
			}
			lines = append(lines, "  "+st.Warn("[~]")+" "+st.Bold(text))
		default:
			lines = append(lines, "  [ ] "+it.Content)
		}
	}
	return strings.Join(lines, "\n")
}

func (t *Transcript) endTurn(te session.TurnEnd, at int64) {
	// A turn whose start this transcript did not see (a page of the
	// transcript view that begins mid-turn) has only part of its figures.
	started := t.turnOpen
	t.flushStream()
	for _, c := range t.cards { // calls that never reported
		t.collapseChildren(c)
		c.State, c.End, c.NoResult = CardFailed, at, true
		if c.Note == "" {
			c.Note = "no result (" + sanitize(te.Reason.Kind) + ")"
		}
		t.cardBlock(c, at)
	}
	t.cards = nil
	t.turnOpen = false
	t.LastTurnUsage = t.turnUsage
	var lines []string
	r := te.Reason
	r.Kind, r.Reason, r.Message, r.Code = sanitize(r.Kind), sanitize(r.Reason), sanitize(r.Message), sanitize(r.Code)
	switch r.Kind {
	case session.EndCompleted:
	case session.EndAborted:
		msg := "⏹ Interrupted"
		if r.Reason != "" {
			msg += " · " + r.Reason
		}
		lines = append(lines, t.st.Warn(msg))
	case session.EndError:
		if t.compactTurn && strings.Contains(r.Message, t.LastCompactError) && t.LastCompactError != "" {
			break // shown by compact/end
		}
		msg := "✗ Error: " + r.Message
		if r.Code != "" {
			msg += " (" + r.Code + ")"
		}
		lines = append(lines, t.st.Err(msg))
		if r.Code == llm.CodeContextTooLong {
			// Compaction already had its one try (or is manual): say what
			// the user can do about it.
			lines = append(lines, t.st.Dim("  too long for the context window: /compact [focus] summarizes it, /clear starts over, /model picks another"))
		}
	case session.EndRejected:
		lines = append(lines, t.st.Warn("✗ Rejected: "+r.Reason))
	case session.EndMaxTokens:
		lines = append(lines, t.st.Warn("⚠ The model hit its output limit"))
	case session.EndMaxSteps:
		lines = append(lines, t.st.Warn("⚠ Stopped: the step limit was reached"))
	case session.EndDisposed:
		lines = append(lines, t.st.Dim("(session closed)"))
	case session.EndInterrupted:
		lines = append(lines, t.st.Warn("⏹ Interrupted"))
	default:
		lines = append(lines, t.st.Warn("turn ended: "+r.Kind))
	}
	if started && (t.usageSeen || t.steps > 0) {
		lines = append(lines, t.st.Dim(TurnFooter(at-t.turnStart, t.steps, t.turnUsage)))
	}
	t.block(strings.Join(lines, "\n"))
}

// TurnFooter is the per-turn summary: time, steps, tokens and cache.
func TurnFooter(ms int64, steps int, u llm.Usage) string {
	parts := []string{"✻ " + fmtDur(ms)}
	if steps > 1 {
		parts = append(parts, fmt.Sprintf("%d steps", steps))
	}
	parts = append(parts,
		"in "+fmtTokens(u.InputTokens),
		"out "+fmtTokens(u.OutputTokens),
		"cache read "+fmtTokens(u.CacheReadTokens),
		"cache write "+fmtTokens(u.CacheWriteTokens))
	if u.ReasoningTokens > 0 {
		parts = append(parts, "reasoning "+fmtTokens(u.ReasoningTokens))
	}
	return strings.Join(parts, " · ")
}

// fmtTokens formats a count: 950, 1.2k, 12k, 1.3M.
func fmtTokens(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	case n < 1_000_000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// Live returns the in-progress rows (running tools, streaming text), at
// most maxRows of streamed text.
func (t *Transcript) Live(width int, now int64, frame string, maxRows int) []string {
	var rows []string
	if t.compacting {
		rows = append(rows, t.st.Dim(frame+" Compacting the conversation…"))
	}
	for _, c := range t.cards {
		rows = append(rows, RenderCard(c, width, now, frame, t.st)...)
		rows = append(rows, t.nestedRows(c, width, now, frame)...)
	}
	if r := strings.TrimSpace(t.reasoning.String()); r != "" && t.text.Len() == 0 {
		ls := wrapLines(r, width-2)
		if t.ShowThinking {
			keep := max(1, maxRows)
			if len(ls) > keep {
				ls = ls[len(ls)-keep:]
			}
			for _, l := range ls {
				rows = append(rows, t.st.Dim("│ "+l))
			}
		} else {
			rows = append(rows, ansi.Truncate(t.st.Dim(t.st.Italic("✻ "+ls[len(ls)-1])), width, "…"))
		}
	}
	if s := strings.Trim(t.text.String()[t.shown:], "\n"); s != "" {
		// The block being written, rendered as it will be committed.
		ls := strings.Split(t.md.Render(closeInline(s, t.split.fence != ""), width), "\n")
		if len(ls) > maxRows && maxRows > 0 {
			ls = append([]string{t.st.Dim("  …")}, ls[len(ls)-maxRows+1:]...)
		}
		for _, l := range ls {
			rows = append(rows, ansi.Truncate(l, width, "…"))
		}
	}
	for _, i := range t.prepOrder {
		p := t.preparing[i]
		name := p.name
		if name == "" {
			name = "a tool call"
		}
		rows = append(rows, t.st.Dim(fmt.Sprintf("%s preparing %s (%d bytes)", frame, name, p.args)))
	}
	return rows
}

// prefixed indents text: the first row after first, the rest after rest,
// wrapped to the width.
func (t *Transcript) prefixed(text, first, rest string) string {
	w := t.width() - max(ansi.StringWidth(first), ansi.StringWidth(rest))
	ls := wrapLines(text, w)
	for i := range ls {
		if i == 0 {
			ls[i] = first + ls[i]
		} else {
			ls[i] = rest + ls[i]
		}
	}
	return strings.Join(ls, "\n")
}

// wrapLines splits text into rows of at most width columns: word-wrapped,
// then hard-wrapped for words longer than a row.
func wrapLines(text string, width int) []string {
	if width < 10 {
		width = 10
	}
	text = strings.ReplaceAll(text, "\t", "    ")
	text = strings.ReplaceAll(text, "\r", "")
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if ansi.StringWidth(l) <= width {
			out = append(out, l)
			continue
		}
		// Continuation rows keep the line's indentation.
		plain := ansi.Strip(l)
		indent := min(len(plain)-len(strings.TrimLeft(plain, " ")), width/2)
		w := ansi.Hardwrap(ansi.Wordwrap(l, width-indent, ""), width-indent, true)
		for i, r := range strings.Split(w, "\n") {
			if i > 0 {
				r = strings.Repeat(" ", indent) + r
			}
			out = append(out, r)
		}
	}
	return out
}

func stripANSI(s string) string { return ansi.Strip(s) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
