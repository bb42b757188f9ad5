package claudemsg

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// refBlock is the reflection-based encoding AppendJSON replaced; it is the
// reference the appenders must match byte for byte.
type refBlock Block

func (b refBlock) MarshalJSON() ([]byte, error) {
	content := make([]refBlock, len(b.Content))
	for i, c := range b.Content {
		content[i] = refBlock(c)
	}
	if b.Content == nil {
		content = nil
	}
	switch b.Type {
	case "text":
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.Type, b.Text})
	case "thinking":
		return json.Marshal(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{b.Type, b.Thinking, b.Signature})
	case "redacted_thinking":
		return json.Marshal(struct {
			Type string `json:"type"`
			Data string `json:"data"`
		}{b.Type, b.Data})
	case "tool_use":
		in := b.Input
		if len(in) == 0 {
			in = json.RawMessage(`{}`)
		}
		return json.Marshal(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, in})
	case "tool_result":
		var c any = content
		if len(b.Content) == 1 && b.Content[0].Type == "text" {
			c = b.Content[0].Text
		} else if b.Content == nil {
			c = ""
		}
		return json.Marshal(struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			Content   any    `json:"content"`
			IsError   bool   `json:"is_error"`
		}{b.Type, b.ToolUseID, c, b.IsError})
	case "image":
		return json.Marshal(struct {
			Type   string       `json:"type"`
			Source *ImageSource `json:"source"`
		}{b.Type, b.Source})
	}
	return json.Marshal(struct {
		Type string `json:"type"`
	}{b.Type})
}

// text draws strings that exercise every escape: quotes, controls, HTML
// characters, U+2028, invalid UTF-8.
func text() *rapid.Generator[string] {
	return rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", `a"b\c`, "<b>&</b>", "line\nbreak\t\x01", "\u2028\u2029", "bad \xff utf8", "ünï"}))
}

func block(depth int) *rapid.Generator[Block] {
	return rapid.Custom(func(t *rapid.T) Block {
		types := []string{"text", "thinking", "redacted_thinking", "tool_use", "image", "other"}
		if depth < 2 {
			types = append(types, "tool_result")
		}
		b := Block{Type: rapid.SampledFrom(types).Draw(t, "type")}
		switch b.Type {
		case "text":
			b.Text = text().Draw(t, "text")
		case "thinking":
			b.Thinking, b.Signature = text().Draw(t, "thinking"), text().Draw(t, "sig")
		case "redacted_thinking":
			b.Data = text().Draw(t, "data")
		case "tool_use":
			b.ID, b.Name = text().Draw(t, "id"), text().Draw(t, "name")
			b.Input = json.RawMessage(rapid.SampledFrom([]string{"", `{}`, `{"command": "a > b && c"}`, "{\n  \"x\": [1, 2]\n}", `[1,"<"]`}).Draw(t, "input"))
		case "tool_result":
			b.ToolUseID = text().Draw(t, "tuid")
			b.IsError = rapid.Bool().Draw(t, "err")
			if rapid.Bool().Draw(t, "hascontent") {
				b.Content = rapid.SliceOfN(block(depth+1), 0, 3).Draw(t, "content")
			}
		case "image":
			if rapid.Bool().Draw(t, "src") {
				b.Source = &ImageSource{Type: "base64", MediaType: "image/png", Data: text().Draw(t, "img")}
			}
		}
		return b
	})
}

func TestAppendJSONMatchesReflection(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := block(0).Draw(t, "block")
		want, err := json.Marshal(refBlock(b))
		if err != nil {
			t.Fatal(err)
		}
		if got := b.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendJSON:\n got %s\nwant %s", got, want)
		}
		// Inside a message, as the transcript and stream-json write it.
		stop := "end_turn"
		m := AssistantMessage{ID: "msg_1", Type: "message", Role: "assistant", Model: text().Draw(t, "model"),
			Content: []Block{b}, StopReason: &stop, Usage: Usage{InputTokens: 3}}
		ref, _ := json.Marshal(struct {
			ID           string     `json:"id"`
			Type         string     `json:"type"`
			Role         string     `json:"role"`
			Model        string     `json:"model"`
			Content      []refBlock `json:"content"`
			StopReason   *string    `json:"stop_reason"`
			StopSequence *string    `json:"stop_sequence"`
			Usage        Usage      `json:"usage"`
		}{m.ID, m.Type, m.Role, m.Model, []refBlock{refBlock(b)}, m.StopReason, nil, m.Usage})
		if got := m.AppendJSON(nil); string(got) != string(ref) {
			t.Fatalf("AssistantMessage.AppendJSON:\n got %s\nwant %s", got, ref)
		}
		if got, _ := json.Marshal(m); string(got) != string(ref) {
			t.Fatalf("json.Marshal of the message:\n got %s\nwant %s", got, ref)
		}
	})
}

// A tool_use input that is not JSON used to fail the whole encoding (the
// transcript dropped the line); it is kept, as text, under "_raw".
func TestAppendJSONKeepsMalformedInput(t *testing.T) {
	b := Block{Type: "tool_use", ID: "c1", Name: "Bash", Input: json.RawMessage(`{"command": "ls`)}
	got := string(b.AppendJSON(nil))
	want := `{"type":"tool_use","id":"c1","name":"Bash","input":{"_raw":"{\"command\": \"ls"}}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}
