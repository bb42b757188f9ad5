package jsonl

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store/internal/eventjson"
	"pgregory.net/rapid"
)

// findSeqForwards is the search findSeq replaced: parse every complete line
// of the window from its start. It is the oracle the backward search must
// agree with.
func findSeqForwards(buf []byte, partial bool, want int64) (at int, found, before bool) {
	pos := 0
	if partial {
		k := bytes.IndexByte(buf, '\n')
		if k < 0 {
			return 0, false, true
		}
		pos = k + 1
	}
	before = true
	for pos < len(buf) {
		k := bytes.IndexByte(buf[pos:], '\n')
		if k < 0 {
			break
		}
		if e, ok := eventjson.Parse(buf[pos : pos+k]); ok {
			switch {
			case e.Seq == want:
				return pos, true, false
			case e.Seq > want:
				return 0, false, before
			}
			before = false
		}
		pos += k + 1
	}
	return 0, false, before
}

// A log as a writer leaves it (seqs rising, with gaps where a window starts
// mid-log or a line was lost), with lines that are not events in between, a
// window cut anywhere (so its first line may be partial) and torn tails:
// the backward search finds the same line, or the same absence, as the
// forward scan, for wanted seqs inside, before, after and between.
func TestFindSeqBackwardsAgreesWithForwards(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var log []byte
		seq := rapid.Int64Range(0, 50).Draw(t, "first")
		var seqs []int64
		n := rapid.IntRange(0, 30).Draw(t, "lines")
		for i := range n {
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 0: // not an event: garbage, a bare value, an object without data
				junk := rapid.SampledFrom([]string{"", "not json", "[1,2]", `{"type":"x","seq":3}`, "{", `"str"`}).Draw(t, "junk")
				log = append(log, junk...)
				log = append(log, '\n')
				continue
			case 1: // a gap: events lost or before the window
				seq += rapid.Int64Range(1, 5).Draw(t, "gap")
			}
			size := rapid.IntRange(0, 200).Draw(t, "size")
			data, _ := json.Marshal(map[string]string{"text": strings.Repeat("é\n\"x", size/4)})
			var err error
			log, err = eventjson.AppendEvent(log, session.Event{Type: "message", Seq: seq, Time: int64(i), Data: data})
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, seq)
			seq++
		}
		// A torn tail: part of one more line, without its newline.
		if rapid.Bool().Draw(t, "torn") {
			tail, _ := eventjson.AppendEvent(nil, session.Event{Type: "message", Seq: seq, Data: json.RawMessage(`{"a":1}`)})
			log = append(log, tail[:rapid.IntRange(0, len(tail)-1).Draw(t, "tornAt")]...)
		}
		cut := rapid.IntRange(0, len(log)).Draw(t, "cut")
		buf, partial := log[cut:], cut > 0
		wants := []int64{seq, seq + 1, -1, 0}
		wants = append(wants, seqs...)
		for _, s := range seqs {
			wants = append(wants, s-1, s+1)
		}
		for _, want := range wants {
			at, found, before := findSeq(buf, partial, want)
			fat, ffound, fbefore := findSeqForwards(buf, partial, want)
			if at != fat || found != ffound || before != fbefore {
				t.Fatalf("seq %d in %q (partial %v): backwards (%d, %v, %v), forwards (%d, %v, %v)",
					want, buf, partial, at, found, before, fat, ffound, fbefore)
			}
		}
	})
}
