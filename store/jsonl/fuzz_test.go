package jsonl

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// FuzzScanLog feeds arbitrary bytes to the loader: it must never panic,
// and whatever it accepts must be a well-formed prefix.
func FuzzScanLog(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte(`{"type":"session","version":0,"id":"s","createdAt":1}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := scanLog(data)
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("error is not ErrCorrupt: %v", err)
			}
			return
		}
		if sc.committed > sc.size || sc.size != int64(len(data)) {
			t.Fatalf("committed %d, size %d, len %d", sc.committed, sc.size, len(data))
		}
		if sc.committed == 0 || data[sc.committed-1] != '\n' {
			t.Fatalf("committed %d is not at a line end", sc.committed)
		}
		for i, e := range sc.events {
			if e.Seq != int64(i) || e.Type == "" || !json.Valid(e.Data) {
				t.Fatalf("event %d: %+v", i, e)
			}
		}
		// The committed bytes alone scan to the same events, with no tail.
		again, err := scanLog(data[:sc.committed])
		if err != nil {
			t.Fatalf("rescanning the committed prefix: %v", err)
		}
		if len(again.events) != len(sc.events) || again.committed != sc.committed {
			t.Fatalf("rescan kept %d events / %d bytes, first scan %d / %d", len(again.events), again.committed, len(sc.events), sc.committed)
		}
		// Closers must be computable (or fail cleanly) on anything accepted.
		_, _ = session.InterruptedClosers(sc.events)
	})
}
