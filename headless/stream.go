package headless

import (
	"encoding/json"
	"io"
	"strconv"
	"sync"

	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// lineWriter writes one JSON value per line, whole lines only, from any
// goroutine. The first write error is kept and later writes are dropped:
// a reader that went away must not block or crash the agent.
type lineWriter struct {
	mu  sync.Mutex
	out io.Writer
	err error
}

func (w *lineWriter) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.raw(b)
}

func (w *lineWriter) raw(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	line := make([]byte, 0, len(b)+1)
	line = append(append(line, b...), '\n')
	if _, err := w.out.Write(line); err != nil {
		w.err = err
	}
	return w.err
}

// Stream-json lines. Field names are Claude Code's.

type assistantLine struct {
	Type            string                      `json:"type"` // assistant
	Message         *claudemsg.AssistantMessage `json:"message"`
	ParentToolUseID *string                     `json:"parent_tool_use_id"`
	// Error classifies a failed model call (a synthetic message carrying
	// the error text), in the SDK's words.
	Error     string `json:"error,omitempty"`
	UUID      string `json:"uuid"`
	SessionID string `json:"session_id"`
}

// assistantError names a dsh error code as the SDK's
// SDKAssistantMessageError.
func assistantError(code string) string {
	switch code {
	case llm.CodeAuth:
		return "authentication_failed"
	case llm.CodeRateLimit:
		return "rate_limit"
	case llm.CodeBadRequest, llm.CodeContextTooLong:
		return "invalid_request"
	case llm.CodeServer, llm.CodeStreamClosed, llm.CodeTimeout, llm.CodeProtocol:
		return "server_error"
	}
	return "unknown"
}

// errorLine is how Claude Code shows a failed model call: an assistant
// message with the error's text, marked with its class.
func errorLine(sid, model string, seq int64, reason session.EndReason) assistantLine {
	at := strconv.FormatInt(seq, 10)
	return assistantLine{Type: "assistant", Error: assistantError(reason.Code), UUID: claudemsg.UUID(sid, "error", at), SessionID: sid,
		Message: &claudemsg.AssistantMessage{ID: claudemsg.MessageID(sid, "error", at), Type: "message", Role: "assistant", Model: model,
			Content: []claudemsg.Block{{Type: "text", Text: "API Error: " + reason.Message}}}}
}

type userLine struct {
	Type            string                 `json:"type"` // user
	Message         *claudemsg.UserMessage `json:"message"`
	ParentToolUseID *string                `json:"parent_tool_use_id"`
	UUID            string                 `json:"uuid"`
	SessionID       string                 `json:"session_id"`
	IsReplay        bool                   `json:"isReplay,omitempty"`
}

type streamEventLine struct {
	Type            string  `json:"type"` // stream_event
	Event           any     `json:"event"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	UUID            string  `json:"uuid"`
	SessionID       string  `json:"session_id"`
}

type mcpServerStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Source string `json:"source,omitempty"`
}

type initLine struct {
	Type              string            `json:"type"`    // system
	Subtype           string            `json:"subtype"` // init
	CWD               string            `json:"cwd"`
	SessionID         string            `json:"session_id"`
	Tools             []string          `json:"tools"`
	MCPServers        []mcpServerStatus `json:"mcp_servers"`
	Model             string            `json:"model"`
	PermissionMode    string            `json:"permissionMode"`
	SlashCommands     []string          `json:"slash_commands"`
	APIKeySource      string            `json:"apiKeySource"`
	ClaudeCodeVersion string            `json:"claude_code_version"`
	OutputStyle       string            `json:"output_style"`
	Agents            []string          `json:"agents"`
	Skills            []string          `json:"skills"`
	Plugins           []any             `json:"plugins"`
	UUID              string            `json:"uuid"`
}

type stateLine struct {
	Type      string `json:"type"`    // system
	Subtype   string `json:"subtype"` // session_state_changed
	State     string `json:"state"`   // idle, running, requires_action
	UUID      string `json:"uuid"`
	SessionID string `json:"session_id"`
}

// partials translates a step's stream chunks into Anthropic streaming
// events (message_start, content_block_start/delta/stop, message_delta,
// message_stop), for --include-partial-messages.
type partials struct {
	session string
	model   string
	// per step
	turn, step int
	open       bool
	started    map[int]bool
	kinds      map[int]llm.BlockType
	usage      *llm.Usage
}

// chunk returns the events one chunk stands for (possibly none).
func (p *partials) chunk(c session.AssistantChunk) []any {
	var out []any
	if !p.open || p.turn != c.Turn || p.step != c.Step {
		p.turn, p.step, p.open = c.Turn, c.Step, true
		p.started, p.kinds, p.usage = map[int]bool{}, map[int]llm.BlockType{}, nil
		out = append(out, map[string]any{"type": "message_start", "message": claudemsg.AssistantMessage{
			ID: claudemsg.StepMessageID(p.session, c.Turn, c.Step), Type: "message", Role: "assistant", Model: p.model,
			Content: []claudemsg.Block{}, Usage: claudemsg.Usage{}}})
	}
	ch := c.Chunk
	start := func(i int, b claudemsg.Block) {
		if p.started[i] {
			return
		}
		p.started[i] = true
		out = append(out, map[string]any{"type": "content_block_start", "index": i, "content_block": b})
	}
	delta := func(i int, d map[string]any) {
		out = append(out, map[string]any{"type": "content_block_delta", "index": i, "delta": d})
	}
	switch ch.Type {
	case llm.ChunkBlockStart:
		p.kinds[ch.Index] = ch.BlockType
		switch ch.BlockType {
		case llm.BlockText:
			start(ch.Index, claudemsg.Block{Type: "text"})
		case llm.BlockReasoning:
			start(ch.Index, claudemsg.Block{Type: "thinking"})
		}
		// A tool_use block starts with its id and name, which arrive with
		// the first argument delta.
	case llm.ChunkTextDelta:
		start(ch.Index, claudemsg.Block{Type: "text"})
		delta(ch.Index, map[string]any{"type": "text_delta", "text": ch.Text})
	case llm.ChunkReasoningDelta:
		start(ch.Index, claudemsg.Block{Type: "thinking"})
		if ch.Text != "" {
			delta(ch.Index, map[string]any{"type": "thinking_delta", "thinking": ch.Text})
		}
		if ch.Signature != "" {
			delta(ch.Index, map[string]any{"type": "signature_delta", "signature": ch.Signature})
		}
	case llm.ChunkToolCallDelta:
		start(ch.Index, claudemsg.Block{Type: "tool_use", ID: string(ch.ID), Name: claudemsg.ToolName(ch.Name), Input: json.RawMessage(`{}`)})
		if ch.ArgsDelta != "" {
			delta(ch.Index, map[string]any{"type": "input_json_delta", "partial_json": ch.ArgsDelta})
		}
	case llm.ChunkBlockEnd:
		if ch.Block != nil {
			if b, ok := claudemsg.FromBlock(*ch.Block); ok {
				if b.Type == "tool_use" {
					b.Input = json.RawMessage(`{}`)
				} else {
					b.Text, b.Thinking, b.Signature = "", "", ""
				}
				start(ch.Index, b)
			}
		}
		if p.started[ch.Index] {
			out = append(out, map[string]any{"type": "content_block_stop", "index": ch.Index})
		}
	case llm.ChunkUsage:
		p.usage = ch.Usage
	case llm.ChunkFinish:
		kind := llm.FinishStop
		if ch.Finish != nil {
			kind = ch.Finish.Kind
		}
		var u claudemsg.Usage
		if p.usage != nil {
			u = claudemsg.FromUsage(*p.usage)
		}
		out = append(out,
			map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": anthropicStop(kind), "stop_sequence": nil}, "usage": u},
			map[string]any{"type": "message_stop"})
		p.open = false
	}
	return out
}

// chunkUUID names the n-th stream event of a chunk event.
func chunkUUID(sessionID string, seq int64, n int) string {
	return claudemsg.UUID(sessionID, "chunk", strconv.FormatInt(seq, 10), strconv.Itoa(n))
}
