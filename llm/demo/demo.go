// Package demo is dsh's offline demo model: a scripted, clearly labelled
// stand-in that lets a newcomer with no API key watch the whole loop work —
// a todo list, a command, a file edit that asks for approval, and a final
// answer — without any network.
package demo

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/dshq/dsh/llm"
)

// ModelID is the demo model's reference.
const ModelID = "demo/offline"

// Adapter is the demo model.
type Adapter struct{}

// Models lists the demo model.
func Models() []llm.ModelInfo { return []llm.ModelInfo{{ID: ModelID, ContextWindow: 128000}} }

// Stream answers from the shape of the conversation, so it is deterministic
// and needs no state of its own.
func (Adapter) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	chunks := respond(req)
	return func(yield func(llm.Chunk, error) bool) {
		for _, c := range chunks {
			if ctx.Err() != nil {
				yield(llm.Chunk{}, context.Cause(ctx))
				return
			}
			if !yield(c, nil) {
				return
			}
		}
	}, nil
}

func respond(req *llm.Request) []llm.Chunk {
	// Count the tool results since the last real user prompt.
	results, prompt := 0, ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != llm.RoleUser {
			continue
		}
		if len(m.Content) > 0 && m.Content[0].Type == llm.BlockToolResult {
			results++
			continue
		}
		t := llm.TextOf(m.Content)
		if strings.HasPrefix(t, "<") {
			continue // context or steering envelope
		}
		prompt = t
		break
	}
	has := func(name string) bool {
		for _, t := range req.Tools {
			if t.Name == name {
				return true
			}
		}
		return false
	}
	switch {
	case results == 0 && has("todo_write"):
		return toolTurn("[offline demo model — no API key is configured, so this is a scripted run]\n\nYou asked: \""+short(prompt)+"\". Let me show you how dsh works: I plan with a todo list, run a command, and edit a file.",
			"todo_write", map[string]any{"todos": []map[string]string{
				{"content": "Look around the working directory", "status": "in_progress"},
				{"content": "Write a note file (asks for your approval)", "status": "pending"},
				{"content": "Explain how to connect a real model", "status": "pending"},
			}})
	case results <= 1 && has("bash"):
		return toolTurn("Listing the directory with the bash tool:", "bash", map[string]any{"command": "ls -la | head -n 20", "description": "List files"})
	case results <= 2 && has("write"):
		return toolTurn("Now I'll write a small note file. dsh asks before editing files in the default permission mode:", "write",
			map[string]any{"file_path": "dsh-demo-note.txt", "content": "Written by dsh's offline demo model.\n"})
	}
	return text("That was the whole loop: tools ran, an edit asked for approval, and the session was saved (see `dsh sessions`).\n\n" +
		"To use a real model, set an API key and start dsh again:\n\n" +
		"- DeepSeek: `export DEEPSEEK_API_KEY=…` (model `deepseek/deepseek-chat`)\n" +
		"- Anthropic: `export ANTHROPIC_API_KEY=…` (model `anthropic/claude-sonnet-4-5`)\n" +
		"- OpenAI or any compatible server: `export OPENAI_API_KEY=…` (and `OPENAI_BASE_URL` for a local server)\n")
}

func short(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

func words(idx int, s string) []llm.Chunk {
	out := []llm.Chunk{llm.StartChunk(idx, llm.BlockText)}
	for _, w := range strings.SplitAfter(s, " ") {
		out = append(out, llm.TextChunk(idx, w))
	}
	return append(out, llm.EndChunk(idx, llm.Text(s)))
}

func text(s string) []llm.Chunk {
	return append(words(0, s), llm.UsageChunk(llm.Usage{InputTokens: 100, OutputTokens: len(s) / 4}), llm.FinishChunk(llm.FinishStop))
}

func toolTurn(prefix, name string, args any) []llm.Chunk {
	b, _ := json.Marshal(args)
	id := llm.CallID("demo-" + name)
	out := words(0, prefix)
	return append(out,
		llm.StartChunk(1, llm.BlockToolCall),
		llm.ToolDeltaChunk(1, id, name, string(b)),
		llm.EndChunk(1, llm.ToolCall(id, name, string(b))),
		llm.UsageChunk(llm.Usage{InputTokens: 100, OutputTokens: 40}),
		llm.FinishChunk(llm.FinishToolCalls))
}
