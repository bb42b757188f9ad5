package term

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/subagent"
)

// Nested subagent activity: while a task or fork call runs, the events of
// the child sessions it started (and their own children) are shown as
// compact lines under its card. They are live only: when the card
// completes they are dropped and the card keeps a one-line count.

// nestedShown is how many nested lines a running card shows (the newest);
// nestedKept bounds what is kept per child.
const (
	nestedShown = 5
	nestedKept  = 64
)

// nestedRun is the activity under one direct child of the current session.
type nestedRun struct {
	lines []*nestedLine
	calls int // tool calls made under it, at any depth
}

// nestedLine is one tool call or message of a descendant session.
type nestedLine struct {
	depth   int // 1 for a direct child
	session session.ID
	card    *Card  // a tool call
	text    string // a message's first line
}

// ApplyChild renders one event of a descendant session. chain runs from the
// current session's direct child down to the session the event belongs to.
func (t *Transcript) ApplyChild(chain []session.ID, e session.Event) {
	if len(chain) == 0 {
		return
	}
	root := chain[0]
	if t.childDone[root] {
		return // the card already completed
	}
	run := t.nested[root]
	add := func(l *nestedLine) {
		if run == nil {
			run = &nestedRun{}
			t.nested[root] = run
		}
		l.depth, l.session = len(chain), chain[len(chain)-1]
		run.lines = append(run.lines, l)
		if len(run.lines) > nestedKept {
			run.lines = run.lines[len(run.lines)-nestedKept:]
		}
	}
	find := func(id llm.CallID) *Card {
		if run == nil {
			return nil
		}
		for i := len(run.lines) - 1; i >= 0; i-- {
			l := run.lines[i]
			if l.card != nil && l.card.ID == id && l.session == chain[len(chain)-1] {
				return l.card
			}
		}
		return nil
	}
	switch e.Type {
	case session.TypeToolCall:
		c, err := session.Decode[session.ToolCall](e)
		if err != nil {
			return
		}
		add(&nestedLine{card: t.newCard(c, e.Time)})
		run.calls++
	case session.TypeApprovalRequest:
		if r, err := session.Decode[session.ApprovalRequest](e); err == nil {
			if c := find(r.CallID); c != nil {
				c.State = CardWaiting
			}
		}
	case session.TypeApprovalAnswer:
		if a, err := session.Decode[session.ApprovalAnswer](e); err == nil {
			if c := find(a.CallID); c != nil {
				c.State = CardRunning
			}
		}
	case session.TypeToolResult:
		r, err := session.Decode[session.ToolResult](e)
		if err != nil {
			return
		}
		if c := find(r.CallID); c != nil {
			c.End, c.State = e.Time, CardDone
			if r.IsError {
				c.State = CardFailed
			}
		}
	case session.TypeAssistantMessage:
		m, err := session.Decode[session.AssistantMessage](e)
		if err != nil {
			return
		}
		if s := firstLine(strings.TrimSpace(sanitize(llm.TextOf(m.Content)))); s != "" {
			add(&nestedLine{text: s})
		}
	}
}

// childStarted links a task card to the child session it started.
func (t *Transcript) childStarted(e session.Event) {
	st, err := session.Decode[subagent.StartEvent](e)
	if err != nil || st.ChildSession == "" {
		return
	}
	if c := t.card(st.CallID); c != nil {
		c.Children = append(c.Children, st.ChildSession)
	}
}

// collapseChildren drops a completed card's nested lines, keeping a count.
func (t *Transcript) collapseChildren(c *Card) {
	for _, id := range c.Children {
		if run := t.nested[id]; run != nil {
			c.NestedCalls += run.calls
		}
		delete(t.nested, id)
		t.childDone[id] = true
	}
}

// nestedRows draws the activity under a running card.
func (t *Transcript) nestedRows(c *Card, width int, now int64, frame string) []string {
	var lines []*nestedLine
	for _, id := range c.Children {
		if run := t.nested[id]; run != nil {
			lines = append(lines, run.lines...)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	var rows []string
	if n := len(lines) - nestedShown; n > 0 {
		rows = append(rows, t.st.Dim(fmt.Sprintf("  ↳ … %d earlier", n)))
		lines = lines[n:]
	}
	for _, l := range lines {
		indent := strings.Repeat("  ", l.depth)
		var body string
		switch {
		case l.card != nil:
			body = cardTitle(l.card, t.st) + t.st.Dim(" · ")
			switch l.card.State {
			case CardRunning:
				body += t.st.Dim(frame + " " + fmtDur(now-l.card.Start))
			case CardWaiting:
				body += t.st.Warn("awaiting approval")
			case CardDone:
				body += t.st.Dim(fmtDur(l.card.End - l.card.Start))
			case CardFailed:
				body += t.st.Err("failed") + t.st.Dim(" · "+fmtDur(l.card.End-l.card.Start))
			}
		default:
			body = t.st.Dim("(child) ") + l.text
		}
		rows = append(rows, ansi.Truncate(indent+t.st.Dim("↳ ")+body, width, "…"))
	}
	return rows
}
