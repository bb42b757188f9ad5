package conformance

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestScenariosLoad(t *testing.T) {
	for _, dialect := range []string{"openai", "anthropic"} {
		scs, err := LoadScenarios(Transcripts(dialect))
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, sc := range scs {
			names[sc.Name] = true
			if sc.Description == "" || len(sc.Responses) == 0 {
				t.Errorf("%s/%s: incomplete scenario", dialect, sc.Name)
			}
			if (sc.Want.Error == nil) == (sc.Want.Finish == nil) {
				t.Errorf("%s/%s: want exactly one of error and finish", dialect, sc.Name)
			}
		}
		// The scenarios the issue requires, for every dialect.
		for _, n := range []string{"text", "reasoning-text", "parallel-tools", "tool-split", "usage-final", "disconnect",
			"malformed", "rate-limit-429", "auth-401", "server-500-then-success", "no-done", "tool-no-id", "html-200", "gzip", "stall"} {
			if !names[n] {
				t.Errorf("%s: no %s scenario", dialect, n)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	tb := func(id llm.CallID, name, args string) *llm.Block { b := llm.ToolCall(id, name, args); return &b }
	txt := func(s string) *llm.Block { b := llm.Text(s); return &b }
	ok := []llm.Chunk{
		llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, "a"), llm.TextChunk(0, "b"), {Type: llm.ChunkBlockEnd, Index: 0, Block: txt("ab")},
		llm.StartChunk(1, llm.BlockToolCall), llm.ToolDeltaChunk(1, "c1", "f", `{"x"`), llm.ToolDeltaChunk(1, "c1", "", `:1}`),
		{Type: llm.ChunkBlockEnd, Index: 1, Block: tb("c1", "f", `{"x":1}`)},
		llm.UsageChunk(llm.Usage{InputTokens: 1}), llm.FinishChunk(llm.FinishToolCalls),
	}
	if err := Validate(ok, nil); err != nil {
		t.Fatalf("valid stream rejected: %v", err)
	}
	llmErr := llm.NewError(llm.CodeServer, "x: boom")
	for name, tc := range map[string]struct {
		chunks []llm.Chunk
		err    error
		want   string
	}{
		"after finish":      {append(append([]llm.Chunk{}, ok...), llm.UsageChunk(llm.Usage{})), nil, "after finish"},
		"no finish":         {ok[:9], nil, "without a finish"},
		"finish then error": {ok, llmErr, "after a finish"},
		"plain error":       {ok[:3], errors.New("boom"), "not an *llm.Error"},
		"delta first":       {[]llm.Chunk{llm.TextChunk(0, "a")}, llmErr, "before its block-start"},
		"wrong delta":       {[]llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.ReasoningChunk(0, "a")}, llmErr, "for a text block"},
		"end mismatch":      {[]llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, "a"), {Type: llm.ChunkBlockEnd, Index: 0, Block: txt("b")}}, llmErr, "differs"},
		"args mismatch":     {[]llm.Chunk{llm.StartChunk(0, llm.BlockToolCall), llm.ToolDeltaChunk(0, "c", "f", "{}"), {Type: llm.ChunkBlockEnd, Index: 0, Block: tb("c", "f", "{ }")}}, llmErr, "differ"},
		"order":             {[]llm.Chunk{llm.StartChunk(1, llm.BlockText), llm.StartChunk(0, llm.BlockText)}, llmErr, "first-seen order"},
		"two usages":        {[]llm.Chunk{llm.UsageChunk(llm.Usage{}), llm.UsageChunk(llm.Usage{})}, llmErr, "second usage"},
		"unclosed":          {[]llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.FinishChunk(llm.FinishStop)}, nil, "never closed"},
		"double end":        {[]llm.Chunk{llm.StartChunk(0, llm.BlockText), {Type: llm.ChunkBlockEnd, Index: 0, Block: txt("")}, {Type: llm.ChunkBlockEnd, Index: 0, Block: txt("")}}, llmErr, "second block-end"},
		"no id":             {[]llm.Chunk{llm.StartChunk(0, llm.BlockToolCall), {Type: llm.ChunkBlockEnd, Index: 0, Block: tb("", "f", "{}")}}, llmErr, "without id"},
	} {
		err := Validate(tc.chunks, tc.err)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}
