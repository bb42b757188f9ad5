package storetest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// bulkyTurn is turn n with steps tool steps whose results carry size bytes
// each, and a few streamed chunks per step.
func bulkyTurn(n, steps, size int, start int64) []Op {
	ops := []Op{TurnStart(n), User(fmt.Sprintf("turn %d", n))}
	big := strings.Repeat("r", size)
	for s := 1; s <= steps; s++ {
		id := llm.CallID(fmt.Sprintf("t%d-s%d", n, s))
		ops = append(ops, StepStart(n, s), Chunk(n, s, "a"), Chunk(n, s, "b"), Assistant(n, s, "calling", id), ToolCall(n, s, id))
		callSeq := start + int64(len(ops)) - 1
		r := ToolResult(n, s, id, callSeq)
		r.Data = session.ToolResult{Turn: n, Step: s, CallID: id, Content: []llm.Block{llm.Text(fmt.Sprint(s, big))}}
		ops = append(ops, r, StepEnd(n, s))
	}
	return append(ops, TurnEnd(n))
}

// flushReleasesAndReadsBack: after a flush the coordinator lets a live
// session drop the payloads of what is stored, and every way of reading the
// log (Log, Range, Decode) gives back exactly what was appended, from this
// backend; after the coordinator lets the session go, reads still work.
func flushReleasesAndReadsBack(e *env) {
	st := newStore()
	a := e.attach(st)
	s, _ := e.live(st, "bulky", session.Options{Header: header("bulky", "/w")})
	e.apply(s, bulkyTurn(1, 120, 3000, 0))
	e.flush(st, s)
	e.apply(s, bulkyTurn(2, 40, 3000, int64(s.Len())))
	e.flush(st, s)
	if s.Released() == 0 {
		e.t.Fatalf("after flushing %d events nothing was released", s.Len())
	}
	_, stored := e.read("bulky")
	log, err := s.Log(e.ctx)
	e.must(err)
	sameEvents(e.t, log, stored)
	released := 0
	for _, ev := range s.Events() {
		if ev.IsReleased() {
			released++
			if ev.Type == session.TypeToolResult {
				r, err := session.Decode[session.ToolResult](ev)
				e.must(err)
				if len(llm.TextOf(r.Content)) < 3000 || r.CallID == "" {
					e.t.Fatalf("read back %+v", r)
				}
			}
		}
	}
	if released == 0 {
		e.t.Fatal("no event is released")
	}
	var got []session.Event
	e.must(s.Range(e.ctx, 300, 700, func(ev session.Event) error { got = append(got, ev); return nil }))
	sameEvents(e.t, got, stored[300:700])
	// A store that fails a read back is an error naming the cause.
	a.fb.FailNext("ReadRange", errors.New("disk on fire"))
	if _, err := s.Log(e.ctx); !errors.Is(err, session.ErrReleased) || !strings.Contains(err.Error(), "disk on fire") {
		e.t.Fatalf("Log with a failing read: %v; want ErrReleased naming the cause", err)
	}
	// The history the next request needs never needed a read.
	if _, err := s.Messages(); err != nil {
		e.t.Fatal(err)
	}
	// Once the session is let go (its agent disposed), reads still work.
	e.must(a.c.Release(e.ctx, "bulky"))
	log, err = s.Log(e.ctx)
	e.must(err)
	sameEvents(e.t, log, stored)
	// A range past the stored end is an error, not a short read.
	err = s.Range(e.ctx, 0, int64(s.Len()), func(session.Event) error { return nil })
	e.must(err)
	if err := readPast(e); !errors.Is(err, store.ErrNotFound) {
		e.t.Fatalf("reading past the stored end: %v; want ErrNotFound", err)
	}
}

func readPast(e *env) error {
	b := e.open()
	defer b.Close()
	sr, ok := b.(store.SpanReader)
	if !ok {
		e.t.Fatalf("%s does not implement store.SpanReader", b.Name())
	}
	n := 0
	err := sr.ReadRange(e.ctx, "bulky", 5, 1_000_000, func(ev session.Event) error {
		if ev.Seq != int64(5+n) {
			e.t.Fatalf("ReadRange gave seq %d at %d", ev.Seq, n)
		}
		n++
		return nil
	})
	if n == 0 {
		e.t.Fatal("ReadRange past the end gave nothing before failing")
	}
	return err
}
