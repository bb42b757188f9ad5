package eventjson

import (
	"bytes"
	"testing"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// FuzzParse checks the fast event decoder against encoding/json: they
// must accept the same lines and decode them identically, and whatever is
// accepted must re-encode to a line that decodes to the same event.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // lines never contain a newline
		}
		got, ok := Parse(line)
		want, wantOK := ParseSlow(line)
		if ok != wantOK {
			t.Fatalf("fast ok=%v, encoding/json ok=%v for %q", ok, wantOK, line)
		}
		if !ok {
			return
		}
		if !sameEvent(got, want) {
			t.Fatalf("fast %+v (data %s)\nslow %+v (data %s)", got, got.Data, want, want.Data)
		}
		enc, err := AppendEvent(nil, got)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", got, err)
		}
		back, ok := Parse(bytes.TrimSuffix(enc, []byte("\n")))
		if !ok || !store.EventsEqual(back, got) {
			t.Fatalf("round trip of %q gave %q: %+v", line, enc, back)
		}
	})
}

func sameEvent(a, b session.Event) bool {
	if a.Type != b.Type || a.Seq != b.Seq || a.Time != b.Time || !bytes.Equal(a.Data, b.Data) {
		return false
	}
	if (a.SourceEventSeqs == nil) != (b.SourceEventSeqs == nil) || len(a.SourceEventSeqs) != len(b.SourceEventSeqs) {
		return false
	}
	for i := range a.SourceEventSeqs {
		if a.SourceEventSeqs[i] != b.SourceEventSeqs[i] {
			return false
		}
	}
	return (a.SurfaceOp == nil) == (b.SurfaceOp == nil) && (a.SurfaceOp == nil || *a.SurfaceOp == *b.SurfaceOp)
}
