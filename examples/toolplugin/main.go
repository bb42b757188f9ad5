// Command toolplugin shows how to add a tool to dsh: a plugin registers a
// typed tool into a core.Host, a scripted model (no network, no API key)
// calls it, and a listener on the live session set prints every event the
// agent appends, so you can see the whole turn as the log records it.
//
//	go run ./examples/toolplugin
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// wordCountArgs are the tool's arguments. tool.Func derives the JSON Schema
// the model sees from this struct, and the registry validates every call
// against it before Run.
type wordCountArgs struct {
	Text string `json:"text" jsonschema:"the text whose words to count"`
}

// wordCount is the tool: pure, fast, and safe to run alongside other
// concurrent tools of the same step.
func wordCount() tool.Tool {
	return tool.Func(tool.Info{
		Name:        "word_count",
		Description: "Count the words of a text.",
		Kind:        tool.KindOther,
		ReadOnly:    true,
		Concurrent:  true,
	}, func(_ context.Context, _ tool.Call, a wordCountArgs) (tool.Result, error) {
		n := len(strings.Fields(a.Text))
		return tool.TextResult(fmt.Sprintf("%d words", n)), nil
	})
}

// plugin is what a composition loads. Everything it registers goes through
// scope, so unloading the plugin removes the tool again.
func plugin(_ context.Context, h *core.Host, scope *kernel.Scope) error {
	return h.Tools.RegisterAll(scope, wordCount())
}

// printEvents is a session/event listener: one line per appended event.
func printEvents(_ context.Context, a session.Appended) error {
	e := a.Event
	fmt.Printf("%3d %-17s %s\n", e.Seq, e.Type, summary(e))
	return nil
}

// summary picks the interesting part of each payload.
func summary(e session.Event) string {
	switch e.Type {
	case session.TypeAssistantChunk:
		c, _ := session.Decode[session.AssistantChunk](e)
		if c.Chunk.Type == llm.ChunkTextDelta {
			return fmt.Sprintf("%s %q", c.Chunk.Type, c.Chunk.Text)
		}
		return string(c.Chunk.Type)
	case session.TypeUserMessage:
		p, _ := session.Decode[session.Prompt](e)
		return llm.TextOf(p.Content)
	case session.TypeAssistantMessage:
		m, _ := session.Decode[session.AssistantMessage](e)
		var parts []string
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockText:
				parts = append(parts, fmt.Sprintf("text %q", b.Text))
			case llm.BlockToolCall:
				parts = append(parts, fmt.Sprintf("call %s %s", b.Name, b.Arguments))
			}
		}
		return strings.Join(parts, "; ")
	case session.TypeToolCall:
		c, _ := session.Decode[session.ToolCall](e)
		return c.Name + " " + c.Arguments
	case session.TypeToolResult:
		r, _ := session.Decode[session.ToolResult](e)
		return llm.TextOf(r.Content)
	case session.TypeTurnEnd:
		t, _ := session.Decode[session.TurnEnd](e)
		return "reason " + t.Reason.Kind
	}
	return string(e.Data)
}

// wordChunks streams a text reply one word per delta.
func wordChunks(s string) []llm.Chunk {
	out := []llm.Chunk{llm.StartChunk(0, llm.BlockText)}
	for _, w := range strings.SplitAfter(s, " ") {
		out = append(out, llm.TextChunk(0, w))
	}
	return append(out, llm.EndChunk(0, llm.Text(s)),
		llm.UsageChunk(llm.Usage{InputTokens: 12, OutputTokens: 4}), llm.FinishChunk(llm.FinishStop))
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "toolplugin:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	// The spine, with the invariants checker on: a malformed log would fail
	// the append that broke it.
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		return err
	}
	defer h.Close(ctx)

	// The model: the first call asks for the tool, the second answers with
	// what the tool returned (it reads the result from the request).
	model := scripted.New(
		scripted.Call("call-1", "word_count", map[string]string{"text": "the quick brown fox"}, ""),
		scripted.Entry{Fn: func(req *llm.Request) []llm.Chunk {
			last := req.Messages[len(req.Messages)-1]
			return wordChunks("It has " + llm.TextOf(last.Content[0].Content) + ".")
		}},
	)
	if _, err := h.LLM.RegisterModels([]string{"scripted/demo"}, model); err != nil {
		return err
	}
	if _, err := h.Use(ctx, "word-count", plugin); err != nil {
		return err
	}
	if err := h.Scope.Add(h.Sessions.Appended.Listen(printEvents)); err != nil {
		return err
	}

	hd, err := h.Agents.Create(ctx, agent.CreateOptions{
		AgentID: "main", SessionID: "toolplugin-demo",
		Options: agent.Options{Model: "scripted/demo"},
	})
	if err != nil {
		return err
	}
	a := hd.Agent
	if err := a.Send(ctx, []llm.Block{llm.Text("How many words are in 'the quick brown fox'?")}, llm.UserSource); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.WhenIdle(wctx); err != nil {
		return err
	}

	// The schema the model was offered, derived from wordCountArgs.
	schema, _ := json.Marshal(model.Requests()[0].Tools[0])
	fmt.Println("tool schema:", string(schema))
	return hd.Dispose(ctx)
}
