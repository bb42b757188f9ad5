package claudemsg

import (
	"strconv"

	"github.com/dshq/dsh/session"
)

// Entry kinds.
const (
	KindAssistant = "assistant"
	KindUser      = "user"
)

// Entry is one Claude Code message derived from a session event.
type Entry struct {
	// Seq is the session event it came from; Index the block's position
	// within that event (assistant entries carry one block each).
	Seq   int64
	Index int
	// UUID is stable for the event and block (see UUID).
	UUID string
	Kind string
	// Assistant or User is set, by Kind.
	Assistant *AssistantMessage
	User      *UserMessage
	// Prompt marks the user's own prompt (user/message); Meta marks text
	// dsh or a plugin added to the conversation (context/message,
	// steering/message from plugins). Tool results are neither.
	Prompt, Meta bool
}

// Converter derives Claude Code messages from one session's events.
type Converter struct {
	// Session is the session id (it seeds uuids and message ids).
	Session string
	// Model names assistant messages that recorded none.
	Model string
}

// Event returns the messages an event stands for: assistant/message gives
// one assistant entry per content block, all sharing one message id, as
// Claude Code writes them while a response streams (stop_reason is null on
// each; the turn's reason is the result's); tool/result gives a user entry
// with one tool_result block; user/message, steering/message and
// context/message give user entries. Other events give none.
func (c Converter) Event(e session.Event) []Entry {
	seq := strconv.FormatInt(e.Seq, 10)
	switch e.Type {
	case session.TypeAssistantMessage:
		am, err := session.Decode[session.AssistantMessage](e)
		if err != nil {
			return nil
		}
		model := am.Model
		if model == "" {
			model = c.Model
		}
		var usage Usage
		if am.Usage != nil {
			usage = FromUsage(*am.Usage)
		}
		id := StepMessageID(c.Session, am.Turn, am.Step)
		var out []Entry
		for i, b := range Blocks(am.Content) {
			if b.Type == "text" && b.Text == "" {
				continue
			}
			out = append(out, Entry{Seq: e.Seq, Index: i, UUID: UUID(c.Session, seq, strconv.Itoa(i)), Kind: KindAssistant,
				Assistant: &AssistantMessage{ID: id, Type: "message", Role: "assistant", Model: model, Content: []Block{b}, Usage: usage}})
		}
		return out
	case session.TypeToolResult:
		tr, err := session.Decode[session.ToolResult](e)
		if err != nil {
			return nil
		}
		b := Block{Type: "tool_result", ToolUseID: string(tr.CallID), Content: Blocks(tr.Content), IsError: tr.IsError}
		return []Entry{{Seq: e.Seq, UUID: UUID(c.Session, seq), Kind: KindUser, User: &UserMessage{Role: "user", Content: []Block{b}}}}
	case session.TypeUserMessage, session.TypeContextMessage:
		p, err := session.Decode[session.Prompt](e)
		if err != nil {
			return nil
		}
		return []Entry{{Seq: e.Seq, UUID: UUID(c.Session, seq), Kind: KindUser, User: &UserMessage{Role: "user", Content: Blocks(p.Content)},
			Prompt: e.Type == session.TypeUserMessage, Meta: e.Type == session.TypeContextMessage}}
	case session.TypeSteeringMessage:
		s, err := session.Decode[session.Steering](e)
		if err != nil {
			return nil
		}
		src := s.Source.OrUser()
		return []Entry{{Seq: e.Seq, UUID: UUID(c.Session, seq), Kind: KindUser, User: &UserMessage{Role: "user", Content: Blocks(s.Content)},
			Prompt: src.Kind == "user", Meta: src.Kind != "user"}}
	}
	return nil
}

// StepMessageID is the message id of a step's assistant message: the same
// for every block of it and for the stream events that delivered it.
func StepMessageID(session string, turn, step int) string {
	return MessageID(session, "turn", strconv.Itoa(turn), "step", strconv.Itoa(step))
}

// Events converts a whole log, in order.
func (c Converter) Events(events []session.Event) []Entry {
	var out []Entry
	for _, e := range events {
		out = append(out, c.Event(e)...)
	}
	return out
}
