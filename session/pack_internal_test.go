package session

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A packed segment gives back every event as it was handed in: times
// that fit the narrow form and those that do not (a segment spanning
// months, a clock that stepped back), append and replace ops, sources near
// and far from their event (and an empty list, which stays one), held
// small payloads and released ones.
func TestPackGivesBackEveryEvent(t *testing.T) {
	s := &Session{id: "pack"}
	for round := range 40 {
		r := rand.New(rand.NewPCG(uint64(round), 7))
		first := int64(r.IntN(1 << 20))
		t0 := int64(1700000000000)
		evs := make([]Event, segmentSize)
		for i := range evs {
			e := Event{Seq: first + int64(i), Type: fmt.Sprintf("t/%d", r.IntN(5)), Time: t0 + int64(i)}
			switch r.IntN(20) {
			case 0:
				e.Time = t0 + 60*86400*1000 // past what 32 bits of milliseconds hold
			case 1:
				e.Time = t0 - 5 // the clock stepped back
			}
			switch r.IntN(3) {
			case 0:
				e.back = s // released
			case 1:
				e.Data = []byte(fmt.Sprintf(`{"n":%d}`, i)) // small, held
			default:
				e.Data = make([]byte, 300) // large, kept whole
				e.Data[0], e.Data[299] = '"', '"'
			}
			switch r.IntN(4) {
			case 0:
				op := AppendOp
				e.SurfaceOp = &op
			case 1:
				op := ReplaceOp(int64(r.IntN(1000)), int64(1000+r.IntN(1000)))
				e.SurfaceOp = &op
			}
			switch r.IntN(4) {
			case 0:
				e.SourceEventSeqs = []int64{}
			case 1:
				for range 1 + r.IntN(6) {
					e.SourceEventSeqs = append(e.SourceEventSeqs, e.Seq-int64(1+r.IntN(8)))
				}
			case 2:
				e.SourceEventSeqs = []int64{int64(r.IntN(1 << 40)), 0, e.Seq + 3}
			}
			evs[i] = e
		}
		g := pack(evs)
		if g.pk == nil && round == 0 {
			t.Fatal("a segment a third of whose events are released was not packed")
		}
		for i, want := range evs {
			got := g.at(i)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(Event{}), cmpopts.IgnoreFields(Event{}, "back", "msg")); diff != "" {
				t.Fatalf("round %d, event %d:\n%s", round, i, diff)
			}
			if (want.SourceEventSeqs == nil) != (got.SourceEventSeqs == nil) {
				t.Fatalf("round %d, event %d: sources %#v came back as %#v", round, i, want.SourceEventSeqs, got.SourceEventSeqs)
			}
			if got.IsReleased() != (want.Data == nil) {
				t.Fatalf("round %d, event %d: released %v; want %v", round, i, got.IsReleased(), want.Data == nil)
			}
		}
	}
}
