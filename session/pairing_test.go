package session_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// shape renders a history compactly: U(text), A(calls), R(id) for a
// result, S(id) for a synthetic "unanswered" result.
func shape(msgs []llm.Message) string {
	var parts []string
	for _, m := range msgs {
		switch {
		case m.Role == llm.RoleAssistant:
			var ids []string
			for _, b := range m.Content {
				if b.Type == llm.BlockToolCall {
					ids = append(ids, string(b.ID))
				}
			}
			parts = append(parts, "A("+strings.Join(ids, ",")+")")
		case len(m.Content) > 0 && m.Content[0].Type == llm.BlockToolResult:
			b := m.Content[0]
			if b.IsError && llm.TextOf(b.Content) == session.UnansweredText {
				parts = append(parts, "S("+string(b.ToolCallID)+")")
			} else {
				parts = append(parts, "R("+string(b.ToolCallID)+")")
			}
		default:
			var texts []string
			for _, b := range m.Content {
				if t := b.Text; t != "" && !strings.HasPrefix(t, "<") {
					texts = append(texts, t)
				}
			}
			parts = append(parts, "U("+strings.Join(texts, "")+")")
		}
	}
	return strings.Join(parts, " ")
}

func wantShape(t *testing.T, s *session.Session, want string) []llm.Message {
	t.Helper()
	got := messages(t, s)
	if shape(got) != want {
		t.Fatalf("history\n got  %s\n want %s", shape(got), want)
	}
	// A resumed session derives the same history.
	if fresh := messages(t, seeded(t, fromDisk(t, s.Events()))); !reflect.DeepEqual(fresh, got) {
		t.Fatalf("resumed history differs:\n live  %s\n fresh %s", jsonOf(t, got), jsonOf(t, fresh))
	}
	return got
}

func contextMsg(t *testing.T, s *session.Session, msg string) {
	t.Helper()
	appendSurface(t, s, session.TypeContextMessage, session.Prompt{Content: text(msg), Source: llm.PluginSource("bash")}, session.AppendOp)
}

// A log written before the loop answered every call of a cancelled step:
// once the history moves on, the call without a result gets a synthetic
// error result right after the real ones.
func TestDerivedHistoryAnswersUnansweredCalls(t *testing.T) {
	s := newSession(t)
	user(t, s, "go")
	assistant(t, s, llm.ToolCall("c1", "stop", "{}"), llm.ToolCall("c2", "never", "{}"))
	toolResult(t, s, "c1", "stopped")
	// c2 may still be running: left alone.
	wantShape(t, s, "U(go) A(c1,c2) R(c1)")
	user(t, s, "again")
	got := wantShape(t, s, "U(go) A(c1,c2) R(c1) S(c2) U(again)")
	want := `{"role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[{"type":"text","text":` +
		fmt.Sprintf("%q", session.UnansweredText) + `}],"isError":true}]}`
	if j := jsonOf(t, got[3]); j != want {
		t.Fatalf("synthetic result\n got  %s\n want %s", j, want)
	}
	assistant(t, s, llm.Text("ok"))
	wantShape(t, s, "U(go) A(c1,c2) R(c1) S(c2) U(again) A()")
	// Later, normal steps extend the view.
	assistant(t, s, llm.ToolCall("c3", "echo", "{}"))
	toolResult(t, s, "c3", "out")
	wantShape(t, s, "U(go) A(c1,c2) R(c1) S(c2) U(again) A() A(c3) R(c3)")
	// A call followed directly by the next model message.
	assistant(t, s, llm.ToolCall("c4", "echo", "{}"))
	assistant(t, s, llm.Text("moved on"))
	wantShape(t, s, "U(go) A(c1,c2) R(c1) S(c2) U(again) A() A(c3) R(c3) A(c4) S(c4) A()")
}

// Context recorded between a call and its result (a completion notice from
// an older build) is moved after the results.
func TestDerivedHistoryMovesMessagesAfterResults(t *testing.T) {
	s := newSession(t)
	user(t, s, "go")
	assistant(t, s, llm.ToolCall("b1", "bash", "{}"), llm.ToolCall("b2", "bash", "{}"))
	toolResult(t, s, "b1", "started")
	contextMsg(t, s, "notice")
	before := wantShape(t, s, "U(go) A(b1,b2) R(b1) S(b2) U(notice)")
	beforeJSON := jsonOf(t, before)
	toolResult(t, s, "b2", "done")
	wantShape(t, s, "U(go) A(b1,b2) R(b1) R(b2) U(notice)")
	if jsonOf(t, before) != beforeJSON {
		t.Fatal("a history returned earlier changed")
	}
	assistant(t, s, llm.Text("fine"))
	user(t, s, "next")
	wantShape(t, s, "U(go) A(b1,b2) R(b1) R(b2) U(notice) A() U(next)")
}

// A well-formed history is the deriver's own slice: no copy, no allocation.
func TestWellFormedHistoryIsNotCopied(t *testing.T) {
	s := newSession(t)
	user(t, s, "go")
	assistant(t, s, llm.ToolCall("c1", "echo", "{}"))
	toolResult(t, s, "c1", "out")
	contextMsg(t, s, "after")
	a, b := messages(t, s), messages(t, s)
	if &a[0] != &b[0] {
		t.Fatal("a well-formed history was copied")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = s.Messages() }); n != 0 {
		t.Fatalf("%v allocations per read", n)
	}
}

// Property: whatever order results and other messages were recorded in
// (results only ever answer the newest assistant message's calls),
// the view keeps every message exactly once, adds only synthetic results,
// and pairs every call with exactly one result right after it, except the
// calls of the newest assistant message while only results follow it.
func TestDerivedHistoryPairsEveryCall(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := newSession(rt)
		var open []llm.CallID
		next := 0
		n := rapid.IntRange(1, 40).Draw(rt, "n")
		for i := range n {
			switch rapid.IntRange(0, 4).Draw(rt, "kind") {
			case 0:
				user(rt, s, fmt.Sprintf("u%d", i))
			case 1:
				appendSurface(rt, s, session.TypeContextMessage, session.Prompt{Content: text(fmt.Sprintf("x%d", i))}, session.AppendOp)
			case 2:
				// Calls still open never get a result: results arrive
				// only for the newest assistant message's calls.
				open = open[:0]
				var content []llm.Block
				for range rapid.IntRange(0, 3).Draw(rt, "calls") {
					next++
					id := llm.CallID(fmt.Sprintf("c%d", next))
					content = append(content, llm.ToolCall(id, "echo", "{}"))
					open = append(open, id)
				}
				if len(content) == 0 {
					content = text(fmt.Sprintf("a%d", i))
				}
				assistant(rt, s, content...)
			default:
				if len(open) == 0 {
					continue
				}
				k := rapid.IntRange(0, len(open)-1).Draw(rt, "result")
				toolResult(rt, s, open[k], "r")
				open = slices.Delete(open, k, k+1)
			}
			raw := rawShapes(rt, s)
			view := messages(rt, s)
			checkView(rt, raw, view)
		}
	})
}

// rawShapes derives the history message by message from the log, without
// the view's repairs.
func rawShapes(t *rapid.T, s *session.Session) []string {
	var out []string
	for _, e := range s.Events() {
		e = e.Clone()
		e.Seq = 0
		one := seeded(t, []session.Event{e})
		for _, m := range messages(t, one) {
			out = append(out, shape([]llm.Message{m}))
		}
	}
	return out
}

func checkView(t *rapid.T, raw []string, view []llm.Message) {
	var got []string
	for _, m := range view {
		if sh := shape([]llm.Message{m}); !strings.HasPrefix(sh, "S(") {
			got = append(got, sh)
		}
	}
	a, b := slices.Clone(raw), slices.Clone(got)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Fatalf("the view lost or added messages:\n raw  %v\n view %s", raw, shape(view))
	}
	for i, m := range view {
		if m.Role != llm.RoleAssistant {
			continue
		}
		want := map[llm.CallID]bool{}
		for _, b := range m.Content {
			if b.Type == llm.BlockToolCall {
				want[b.ID] = true
			}
		}
		j := i + 1
		for ; j < len(view) && len(want) > 0; j++ {
			c := view[j].Content
			if view[j].Role != llm.RoleUser || len(c) == 0 || c[0].Type != llm.BlockToolResult || !want[c[0].ToolCallID] {
				break
			}
			delete(want, c[0].ToolCallID)
		}
		if len(want) == 0 {
			continue
		}
		// Only the newest calls, with nothing but results after them, may
		// wait for their results.
		if j != len(view) {
			t.Fatalf("calls %v of message %d are not answered before message %d: %s", want, i, j, shape(view))
		}
	}
}
