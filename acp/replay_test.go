package acp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// streamedStep logs one streamed step: reasoning and text deltas, the
// message, a bash call and its result.
func streamedStep(l *log, turn, step, deltas int) {
	var text, thought strings.Builder
	for d := range deltas {
		p := fmt.Sprintf("t%d ", d)
		thought.WriteString(p)
		l.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: step, Chunk: llm.ReasoningChunk(0, p)})
	}
	for d := range deltas {
		p := fmt.Sprintf("w%d ", d)
		text.WriteString(p)
		l.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: step, Chunk: llm.TextChunk(1, p)})
	}
	id := llm.CallID(fmt.Sprintf("c%d-%d", turn, step))
	args := `{"command":"echo hi","description":"say hi"}`
	l.add(session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: step, Model: "m",
		Usage:   &llm.Usage{InputTokens: 100 * step, OutputTokens: 10},
		Content: []llm.Block{llm.Reasoning(thought.String()), llm.Text(text.String()), {Type: llm.BlockToolCall, ID: id, Name: "bash", Arguments: args}}})
	l.add(session.TypeToolCall, session.ToolCall{Turn: turn, Step: step, CallID: id, Name: "bash", Arguments: args})
	l.add(session.TypeApprovalAnswer, session.ApprovalAnswer{CallID: id, Allow: true})
	l.add(session.TypeToolResult, session.ToolResult{Turn: turn, Step: step, CallID: id, Content: []llm.Block{llm.Text("hi\n")}})
	l.add(session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: step})
}

// A replay sends each message whole and each call once, with its final
// state: its frames grow with the messages, not with the deltas the model
// streamed them in, and it holds nothing past the open step.
func TestReplayFramesAreBounded(t *testing.T) {
	const steps, deltas = 50, 200
	var l log
	l.add(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: session.TriggerMessage}})
	l.add(session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("go")}})
	ends := map[int64]bool{}
	for s := 1; s <= steps; s++ {
		streamedStep(&l, 1, s, deltas)
		ends[l.events[len(l.events)-1].Seq] = true
	}
	l.add(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}})

	var frames []sdk.SessionUpdate
	bytes := 0
	tr := newTranslator("/w", tools(t), func(string) int { return 100000 })
	tr.replay = true
	p := newReplayer(tr, func(u sdk.SessionUpdate) {
		b, _ := json.Marshal(sdk.SessionNotification{SessionId: "s", Update: u})
		bytes += len(b)
		frames = append(frames, u)
	})
	for _, e := range l.events {
		p.event(e)
		if ends[e.Seq] && (len(p.chunks) != 0 || len(p.stream) != 0 || len(p.queue) != 0 || len(p.cards) != 0) {
			t.Fatalf("after step end %d the replay still holds %d chunks, %d runs, %d queued, %d cards", e.Seq, len(p.chunks), len(p.stream), len(p.queue), len(p.cards))
		}
	}
	p.finish()

	// One prompt, per step a thought, a text and a call, one usage update.
	if want := 1 + 3*steps + 1; len(frames) != want {
		t.Fatalf("%d frames for %d events, want %d", len(frames), len(l.events), want)
	}
	for s := range steps {
		th, tx, call := frames[1+3*s], frames[2+3*s], frames[3+3*s]
		if th.AgentThoughtChunk == nil || tx.AgentMessageChunk == nil || call.ToolCall == nil {
			t.Fatalf("step %d frames %s %s %s", s+1, wire(t, []sdk.SessionUpdate{th}), wire(t, []sdk.SessionUpdate{tx}), wire(t, []sdk.SessionUpdate{call}))
		}
		if !strings.HasPrefix(text(tx), "w0 w1 ") || strings.Count(text(tx), "w") != deltas {
			t.Fatalf("step %d text %q", s+1, text(tx))
		}
		c := call.ToolCall
		if c.Status != sdk.ToolCallStatusCompleted || c.Kind != sdk.ToolKindExecute || len(c.Content) != 1 || c.Content[0].Content == nil ||
			!strings.Contains(c.Content[0].Content.Content.Text.Text, "hi") {
			t.Fatalf("step %d call card %s", s+1, wire(t, []sdk.SessionUpdate{call}))
		}
	}
	if u := frames[len(frames)-1].UsageUpdate; u == nil || u.Used != 100*steps+10 {
		t.Fatalf("last frame %s", wire(t, frames[len(frames)-1:]))
	}
	// The live stream of the same log, for scale: a frame per delta.
	live := newTranslator("/w", tools(t), func(string) int { return 100000 })
	liveBytes, liveFrames := 0, 0
	for _, e := range l.events {
		for _, u := range live.translate(e) {
			b, _ := json.Marshal(sdk.SessionNotification{SessionId: "s", Update: u})
			liveBytes += len(b)
			liveFrames++
		}
	}
	if bytes*5 > liveBytes {
		t.Fatalf("replay %d bytes in %d frames, live %d bytes in %d frames: not bounded by the messages", bytes, len(frames), liveBytes, liveFrames)
	}
	t.Logf("replay %d bytes in %d frames; live %d bytes in %d frames", bytes, len(frames), liveBytes, liveFrames)
}

func text(u sdk.SessionUpdate) string {
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		return u.AgentMessageChunk.Content.Text.Text
	case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil:
		return u.AgentThoughtChunk.Content.Text.Text
	case u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil:
		return u.UserMessageChunk.Content.Text.Text
	}
	return ""
}

// A step cut off mid-stream (a crash: no message) shows what streamed, one
// chunk per run of text or reasoning, however long the stream; a call cut
// off by the turn's end goes out once, failed.
func TestReplayUnfinishedStepAndCall(t *testing.T) {
	var l log
	l.add(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: session.TriggerMessage}})
	l.add(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1})
	l.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Chunk: llm.ReasoningChunk(0, "mull")})
	for range 3 * maxHeldChunks {
		l.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Chunk: llm.TextChunk(1, "x")})
	}
	l.add(session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1})
	l.add(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 2})
	l.add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 2, Content: []llm.Block{{Type: llm.BlockToolCall, ID: "k", Name: "bash", Arguments: `{"command":"sleep 9"}`}}})
	l.add(session.TypeToolCall, session.ToolCall{Turn: 1, Step: 2, CallID: "k", Name: "bash", Arguments: `{"command":"sleep 9"}`})
	l.add(session.TypeApprovalAnswer, session.ApprovalAnswer{CallID: "k", Allow: true})
	l.add(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndInterrupted}})
	var frames []sdk.SessionUpdate
	tr := newTranslator("/w", tools(t), nil)
	tr.replay = true
	p := newReplayer(tr, func(u sdk.SessionUpdate) { frames = append(frames, u) })
	for _, e := range l.events {
		p.event(e)
	}
	p.finish()
	if len(frames) != 3 || text(frames[0]) != "mull" || frames[1].AgentMessageChunk == nil || text(frames[1]) != strings.Repeat("x", 3*maxHeldChunks) {
		t.Fatalf("frames %q", wire(t, frames))
	}
	if c := frames[2].ToolCall; c == nil || c.ToolCallId != "k" || c.Status != sdk.ToolCallStatusFailed || len(c.Content) != 1 {
		t.Fatalf("cut-off call %s", wire(t, frames[2:]))
	}
}
