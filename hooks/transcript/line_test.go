package transcript

import (
	"encoding/json"
	"testing"

	"github.com/dshq/dsh/internal/claudemsg"
	"pgregory.net/rapid"
)

// The hand-written line encoding must write what encoding/json writes for
// the struct (field order, omitempty, escaping): hooks parse these lines.
func TestLineEncodingMatchesReflection(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", "<a&b>", "q\"uote\n", "\u2028", "\xff"}))
		l := line{IsSidechain: rapid.Bool().Draw(t, "side"), UserType: s.Draw(t, "ut"), Cwd: s.Draw(t, "cwd"),
			SessionID: s.Draw(t, "sid"), Version: s.Draw(t, "v"), GitBranch: s.Draw(t, "gb"), AgentID: s.Draw(t, "aid"),
			Type: s.Draw(t, "type"), Subtype: s.Draw(t, "sub"), Content: s.Draw(t, "content"), Level: s.Draw(t, "level"),
			IsMeta: rapid.Bool().Draw(t, "meta"), IsCompact: rapid.Bool().Draw(t, "compact"),
			UUID: s.Draw(t, "uuid"), Timestamp: s.Draw(t, "ts"), RequestID: s.Draw(t, "rid")}
		if rapid.Bool().Draw(t, "parent") {
			p := s.Draw(t, "p")
			l.ParentUUID = &p
		}
		blocks := []claudemsg.Block{{Type: "text", Text: s.Draw(t, "text")},
			{Type: "tool_use", ID: "c1", Name: "Bash", Input: json.RawMessage(`{"command": "a > b"}`)}}
		switch rapid.IntRange(0, 3).Draw(t, "msg") {
		case 1:
			l.Message = claudemsg.AssistantMessage{ID: "m", Type: "message", Role: "assistant", Content: blocks}
		case 2:
			l.Message = claudemsg.UserMessage{Role: "user", Content: blocks}
		case 3:
			l.Message = promptMessage{Role: "user", Content: s.Draw(t, "prompt")}
		}
		if rapid.Bool().Draw(t, "result") {
			l.ToolUseResult = map[string]any{"stdout": s.Draw(t, "out"), "interrupted": false}
		}
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.appendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Fatalf("appendJSON (err %v):\n got %s\nwant %s", err, got, want)
		}
	})
}
