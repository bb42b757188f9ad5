package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

func TestEncodeSegment(t *testing.T) {
	for in, want := range map[string]string{
		"a/b":          "a~002Fb",
		"/etc/passwd":  "~002Fetc~002Fpasswd",
		"a\x00b":       "a~0000b",
		"a~b":          "a~007Eb",
		"plain-ID_1.2": "plain-ID_1.2",
		".":            "~002E",
		"..":           "~002E~002E",
		"...":          "...",
		"é":            "~00E9",
		"😀":            "~D83D~DE00",
		"x\xffy":       "x~~FFy",
	} {
		got, err := EncodeSegment(in)
		if err != nil || got != want {
			t.Errorf("EncodeSegment(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := EncodeSegment(""); err == nil || !strings.Contains(err.Error(), "cannot encode an empty path segment") {
		t.Errorf("empty: %v", err)
	}
}

func TestEncodeSegmentInjectiveAndSafe(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.OneOf(rapid.String(), rapid.StringMatching(`[a-z.~/]{1,6}`), rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }))
		a, b := gen.Draw(t, "a"), gen.Draw(t, "b")
		if a == "" || b == "" {
			return
		}
		ea, _ := EncodeSegment(a)
		eb, _ := EncodeSegment(b)
		if (a == b) != (ea == eb) {
			t.Fatalf("%q→%q, %q→%q", a, ea, b, eb)
		}
		if ea == "." || ea == ".." || len(ea) == 0 {
			t.Fatalf("%q→%q", a, ea)
		}
		for i := 0; i < len(ea); i++ {
			if c := ea[i]; !keep(c) && c != '~' {
				t.Fatalf("%q→%q has %q", a, ea, c)
			}
		}
	})
}

func TestTitle(t *testing.T) {
	if got := Title("  fix\tthe \n build "); got != "fix the build" {
		t.Errorf("%q", got)
	}
	long := strings.Repeat("é", 200)
	got := Title(long)
	if n := len([]rune(got)); n != TitleRunes || !strings.HasSuffix(got, "…") {
		t.Errorf("%d runes: %q", n, got)
	}
}

// ev builds an event with seq i.
func ev(i int, typ string, data any) session.Event {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	e := session.Event{Type: typ, Seq: int64(i), Time: int64(1000 + i), Data: raw}
	if session.SurfaceEligible(typ) {
		op := session.AppendOp
		e.SurfaceOp = &op
	}
	return e
}

// TestOpenTurnGivesSameClosers checks the load shortcut: closers computed
// from the open final turn alone equal closers computed from the whole log.
func TestOpenTurnGivesSameClosers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var evs []session.Event
		add := func(typ string, data any) { evs = append(evs, ev(len(evs), typ, data)) }
		turns := rapid.IntRange(0, 4).Draw(t, "turns")
		for turn := 1; turn <= turns; turn++ {
			add(session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: "message"}})
			steps := rapid.IntRange(0, 3).Draw(t, "steps")
			for step := 1; step <= steps; step++ {
				add(session.TypeStepStart, session.StepBoundary{Turn: turn, Step: step})
				id := llm.CallID(fmt.Sprintf("c%d-%d", turn, step))
				add(session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: step, Content: []llm.Block{llm.ToolCall(id, "bash", "{}")}})
				if rapid.Bool().Draw(t, "call") {
					add(session.TypeToolCall, session.ToolCall{Turn: turn, Step: step, CallID: id, Name: "bash"})
				}
				if rapid.Bool().Draw(t, "result") {
					add(session.TypeToolResult, session.ToolResult{Turn: turn, Step: step, CallID: id})
				}
				if turn < turns || rapid.Bool().Draw(t, "stepEnd") {
					add(session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: step})
				}
			}
			if turn < turns || rapid.Bool().Draw(t, "turnEnd") {
				add(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.EndReason{Kind: "completed"}})
			}
		}
		cut := rapid.IntRange(0, len(evs)).Draw(t, "cut")
		evs = evs[:cut]
		all, err1 := session.InterruptedClosers(evs)
		part, err2 := session.InterruptedClosers(openTurn(evs))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if len(all) != len(part) {
			t.Fatalf("%d closers vs %d", len(all), len(part))
		}
		for i := range all {
			if !EventsEqual(all[i], part[i]) {
				t.Fatalf("closer %d: %+v vs %+v", i, all[i], part[i])
			}
		}
	})
}

func TestSummary(t *testing.T) {
	h := session.Header{ID: "x", CreatedAt: 5}
	in := NewInfo(h, nil)
	if in.LastActivity != 5 || in.Events != 0 {
		t.Fatalf("%+v", in)
	}
	evs := []session.Event{
		ev(0, session.TypeTurnStart, session.TurnStart{Turn: 1}),
		ev(1, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("compact summary")}, Source: llm.PluginSource("compact")}),
		ev(2, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("real prompt")}}),
		ev(3, session.TypeTurnEnd, session.TurnEnd{Turn: 1}),
	}
	in = NewInfo(h, evs)
	if in.Title != "real prompt" || in.Turns != 1 || in.Events != 4 || in.LastActivity != 1003 {
		t.Fatalf("%+v", in)
	}
}

func TestCheckID(t *testing.T) {
	for _, id := range []session.ID{"", "a\xffb"} {
		if checkID(id) == nil {
			t.Errorf("%q accepted", id)
		}
	}
	if err := checkID("a/b c"); err != nil {
		t.Error(err)
	}
}
