package jsonl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dshq/dsh/session"
)

func TestSalvage(t *testing.T) {
	ev := func(seq int) string {
		return fmt.Sprintf(`{"type":"note","seq":%d,"time":1,"data":{"n":%d}}`+"\n", seq, seq)
	}
	head := `{"type":"session","version":1,"id":"s","createdAt":5}` + "\n"
	for _, tc := range []struct {
		name   string
		log    string
		seqs   []int64
		damage []string
		header bool // header damaged
	}{
		{"intact", head + ev(0) + ev(1), []int64{0, 1}, nil, false},
		{"garbage in the middle", head + ev(0) + "garbage\nmore garbage\n" + ev(1) + ev(2), []int64{0, 1, 2},
			[]string{"p: lines 3-4, bytes 102-122: not a JSON event"}, false},
		{"a lost event", head + ev(0) + "{\"type\":\"note\",\"se\n" + ev(2), []int64{0, 2},
			[]string{"p: line 3, bytes 102-120: not a JSON event", "p: seq 1: events missing before line 4"}, false},
		{"torn tail", head + ev(0) + `{"type":"no`, []int64{0},
			[]string{"p: line 3, bytes 102-112: a final line cut off mid-write"}, false},
		{"repeat", head + ev(0) + ev(0) + ev(1), []int64{0, 1},
			[]string{"p: line 3, bytes 102-149, seq 0: seq 0 again (after 0); left out"}, false},
		{"bad header", "junk\n" + ev(0), []int64{0}, []string{"p: line 1, bytes 0-4: not a session header"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sv := salvage("s", "p", []byte(tc.log))
			var seqs []int64
			for _, e := range sv.Events {
				seqs = append(seqs, e.Seq)
			}
			if fmt.Sprint(seqs) != fmt.Sprint(tc.seqs) {
				t.Errorf("seqs %v, want %v", seqs, tc.seqs)
			}
			var damage []string
			for _, d := range sv.Damage {
				damage = append(damage, d.String())
			}
			if strings.Join(damage, "|") != strings.Join(tc.damage, "|") {
				t.Errorf("damage %q, want %q", damage, tc.damage)
			}
			if sv.HeaderDamaged != tc.header || sv.Header.ID != session.ID("s") {
				t.Errorf("header %+v damaged %v", sv.Header, sv.HeaderDamaged)
			}
		})
	}
}
