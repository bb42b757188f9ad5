package session_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// typeKeptNote is a plugin event type kept on resume (see KeepOnResume).
const typeKeptNote = "snaptest/note"

func init() { session.KeepOnResume(typeKeptNote) }

// genSession appends a random log of whole turns to s: prompts, streamed
// chunks, assistant messages with tool calls (some rewritten), results,
// context and steering messages, summaries that replace ranges of the
// surface, and kept plugin events. It returns the event count at each turn
// end, where a snapshot may be taken.
func genSession(t *rapid.T, s *session.Session) []int {
	w := s.Writer(ownership.Fixtures)
	must := func(_ session.Event, err error) {
		if err != nil {
			t.Fatalf("append: %v", err)
		}
	}
	var ends []int
	turns := rapid.IntRange(1, 6).Draw(t, "turns")
	call := 0
	for turn := 1; turn <= turns; turn++ {
		must(w.Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: session.TriggerMessage}}))
		must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: text(fmt.Sprintf("task %d", turn)), Source: llm.UserSource}, session.AppendOp, nil))
		steps := rapid.IntRange(1, 4).Draw(t, "steps")
		for step := 1; step <= steps; step++ {
			must(w.Append(ctx, session.TypeStepStart, session.StepBoundary{Turn: turn, Step: step}))
			for range rapid.IntRange(0, 5).Draw(t, "chunks") {
				must(w.AppendChunk(ctx, turn, step, llm.Chunk{Type: llm.ChunkTextDelta, Text: "x"}))
			}
			if step < steps {
				call++
				id := llm.CallID(fmt.Sprintf("c%d", call))
				must(w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: step,
					Content: []llm.Block{llm.Text("calling"), {Type: llm.BlockToolCall, ID: id, Name: "bash", Arguments: `{"command":"ls"}`}}}, session.AppendOp, nil))
				tc := session.ToolCall{Turn: turn, Step: step, CallID: id, Name: "bash", Arguments: `{"command":"ls"}`}
				if rapid.Bool().Draw(t, "rewrite") {
					orig := tc.Arguments
					tc.Arguments, tc.OriginalArguments = `{"command":"ls -a"}`, &orig
				}
				must(w.Append(ctx, session.TypeToolCall, tc))
				if rapid.IntRange(0, 3).Draw(t, "context") == 0 {
					must(w.AppendSurface(ctx, session.TypeContextMessage, session.Prompt{Content: text("ctx"), Source: llm.PluginSource("p")}, session.AppendOp, nil))
				}
				must(w.AppendSurface(ctx, session.TypeToolResult, session.ToolResult{Turn: turn, Step: step, CallID: id, Content: text("out")}, session.AppendOp, nil))
			} else {
				must(w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: step, Content: text("done")}, session.AppendOp, nil))
			}
			if rapid.IntRange(0, 4).Draw(t, "note") == 0 {
				must(w.Append(ctx, typeKeptNote, map[string]int{"turn": turn, "step": step}))
			}
			must(w.Append(ctx, session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: step}))
		}
		if rapid.IntRange(0, 2).Draw(t, "steer") == 0 {
			must(w.AppendSurface(ctx, session.TypeSteeringMessage, session.Steering{Turn: turn, Content: text("steer"), Source: llm.UserSource}, session.AppendOp, nil))
		}
		if rapid.IntRange(0, 2).Draw(t, "compact") == 0 {
			nodes, err := s.Surface()
			if err != nil {
				t.Fatalf("Surface: %v", err)
			}
			if len(nodes) > 2 {
				i := rapid.IntRange(0, len(nodes)-2).Draw(t, "from")
				j := rapid.IntRange(i, len(nodes)-2).Draw(t, "to")
				must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: text("summary"), Source: llm.PluginSource("compact")},
					session.ReplaceOp(nodes[i], nodes[j]), []int64{nodes[i]}))
			}
		}
		must(w.Append(ctx, session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.EndReason{Kind: session.EndCompleted}}))
		ends = append(ends, s.Len())
	}
	return ends
}

// derived is everything a resume rebuilds that readers see.
type derived struct {
	Messages []llm.Message
	Surface  []int64
	Turns    session.TurnState
	Starts   []bool
	Kept     []string // the kept plugin events the held log shows
	Len      int
}

func derive(t tb, s *session.Session) derived {
	t.Helper()
	msgs, err := s.Messages()
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	surf, err := s.Surface()
	if err != nil {
		t.Fatalf("Surface: %v", err)
	}
	d := derived{Messages: msgs, Surface: surf, Turns: s.Turns(), Len: s.Len()}
	for turn := 0; turn <= d.Turns.Last+1; turn++ {
		d.Starts = append(d.Starts, s.HasTurnStart(turn))
	}
	for e := range s.Scan(0) {
		if e.Type == typeKeptNote {
			d.Kept = append(d.Kept, fmt.Sprintf("%d:%s", e.Seq, e.Data))
		}
	}
	return d
}

// resumeFrom builds a session from an encoded snapshot of the first covers
// events of log plus the rest of log.
func resumeFrom(t tb, blob []byte, log []session.Event) (*session.Session, error) {
	t.Helper()
	sn, err := session.DecodeSnapshot(blob)
	if err != nil {
		return nil, err
	}
	if sn.Covers() > int64(len(log)) {
		return nil, fmt.Errorf("covers %d of a %d-event log: %w", sn.Covers(), len(log), session.ErrSnapshot)
	}
	if err := sn.CheckAnchor(log[sn.Covers()-1]); err != nil {
		return nil, err
	}
	return session.New("s1", session.Options{Snapshot: sn, Seed: log[sn.Covers():], Validated: true, Clock: fixedClock})
}

// TestSnapshotResumeDerivesWhatReplayDerives: over random sessions, a
// session resumed from a snapshot taken at any turn end plus the events
// after it derives the same history, surface, turn structure and kept
// events as one that replays the whole log.
func TestSnapshotResumeDerivesWhatReplayDerives(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		live := newSession(t)
		ends := genSession(t, live)
		log := live.Events()
		at := ends[rapid.IntRange(0, len(ends)-1).Draw(t, "at")]

		// The snapshot is taken of a session holding exactly the first
		// at events (as the store would, at that turn end).
		prefix := seeded(t, log[:at])
		sn, err := prefix.Snapshot(ctx)
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		blob, err := sn.Encode()
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		replayed := seeded(t, log)
		resumed, err := resumeFrom(t, blob, log)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		want, got := derive(t, replayed), derive(t, resumed)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("resumed from a snapshot at %d of %d events, derived state differs (-replay +resumed):\n%s", at, len(log), diff)
		}
		if resumed.Base() != int64(at) {
			t.Fatalf("Base = %d, want %d", resumed.Base(), at)
		}
		// Both go on the same way: one more turn.
		for _, s := range []*session.Session{replayed, resumed} {
			w := s.Writer(ownership.Fixtures)
			if _, err := w.Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 99}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: text("more"), Source: llm.UserSource}, session.AppendOp, nil); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(derive(t, replayed), derive(t, resumed)); diff != "" {
			t.Fatalf("after one more append (-replay +resumed):\n%s", diff)
		}
		// A snapshot of the resumed session is the snapshot of the log.
		if _, err := w(resumed).Append(ctx, session.TypeTurnEnd, session.TurnEnd{Turn: 99, Reason: session.EndReason{Kind: session.EndCompleted}}); err != nil {
			t.Fatal(err)
		}
		if _, err := w(replayed).Append(ctx, session.TypeTurnEnd, session.TurnEnd{Turn: 99, Reason: session.EndReason{Kind: session.EndCompleted}}); err != nil {
			t.Fatal(err)
		}
		a, err := resumed.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := replayed.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ab, _ := a.Encode()
		bb, _ := b.Encode()
		if !bytes.Equal(ab, bb) {
			t.Fatalf("a snapshot of the resumed session differs from one of the replayed session:\n%s\n%s", ab, bb)
		}
	})
}

func w(s *session.Session) session.Writer { return s.Writer(ownership.Fixtures) }

// fixtureLog is a fixed three-turn log with a summary replace and a kept
// event, and the encoded snapshot of its first two turns.
func fixtureLog(t *testing.T) (log []session.Event, blob []byte) {
	t.Helper()
	var ends []int
	rapid.Check(t, func(rt *rapid.T) {
		if log != nil {
			return
		}
		s := newSession(rt)
		ends = genSession(rt, s)
		if len(ends) < 3 {
			rt.Skip("want three turns")
		}
		log = s.Events()
	})
	if log == nil {
		t.Fatal("no fixture")
	}
	sn, err := seeded(t, log[:ends[1]]).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if blob, err = sn.Encode(); err != nil {
		t.Fatal(err)
	}
	return log, blob
}

func TestTornSnapshotIsRefused(t *testing.T) {
	log, blob := fixtureLog(t)
	cases := map[string][]byte{
		"cut in the body":     blob[:len(blob)-7],
		"cut in the head":     blob[:10],
		"empty":               nil,
		"a byte of the body":  flip(blob, len(blob)-3),
		"a byte of the count": bytes.Replace(blob, []byte(`"bytes":`), []byte(`"bytes":1`), 1),
	}
	for name, b := range cases {
		if _, err := resumeFrom(t, b, log); !errors.Is(err, session.ErrSnapshot) {
			t.Errorf("%s: err = %v, want ErrSnapshot", name, err)
		}
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x20
	return out
}

func TestStaleSnapshotIsRefused(t *testing.T) {
	log, blob := fixtureLog(t)
	sn, err := session.DecodeSnapshot(blob)
	if err != nil {
		t.Fatal(err)
	}
	// The log was cut back (a rewind of the files, a restore from an
	// older copy) to before what the snapshot covers.
	short := log[:sn.Covers()-1]
	if _, err := resumeFrom(t, blob, short); !errors.Is(err, session.ErrSnapshot) {
		t.Fatalf("err = %v, want ErrSnapshot", err)
	}
}

func TestInconsistentSnapshotIsRefused(t *testing.T) {
	log, blob := fixtureLog(t)
	sn, err := session.DecodeSnapshot(blob)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the last covered event differs", func(t *testing.T) {
		other := append([]session.Event(nil), log...)
		e := other[sn.Covers()-1].Clone()
		e.Time++
		other[sn.Covers()-1] = e
		if _, err := resumeFrom(t, blob, other); !errors.Is(err, session.ErrSnapshot) {
			t.Fatalf("err = %v, want ErrSnapshot", err)
		}
	})
	t.Run("an event after it replaces a node it does not have", func(t *testing.T) {
		other := append([]session.Event(nil), log[:sn.Covers()]...)
		op := session.ReplaceOp(1_000_000, 1_000_000)
		other = append(other, session.Event{Type: session.TypeUserMessage, Seq: sn.Covers(), Time: now,
			Data: []byte(`{"content":[{"type":"text","text":"s"}],"source":{"kind":"plugin","plugin":"compact"}}`), SurfaceOp: &op})
		if _, err := resumeFrom(t, blob, other); !errors.Is(err, session.ErrSnapshot) {
			t.Fatalf("err = %v, want ErrSnapshot", err)
		}
		// A replay of that log fails too, the same way: the snapshot
		// refuses exactly what a replay would.
		if _, err := seeded(t, other).Messages(); err == nil {
			t.Fatal("replay accepted the bad replace")
		}
	})
	t.Run("the tail does not start where the snapshot ends", func(t *testing.T) {
		_, err := session.New("s1", session.Options{Snapshot: sn, Seed: log[sn.Covers()+1:], Validated: true})
		if !errors.Is(err, session.ErrSnapshot) {
			t.Fatalf("err = %v, want ErrSnapshot", err)
		}
	})
}

func TestSnapshotRefusedInsideATurn(t *testing.T) {
	s := newSession(t)
	if _, err := w(s).Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx); !errors.Is(err, session.ErrTurnOpen) {
		t.Fatalf("err = %v, want ErrTurnOpen", err)
	}
}
