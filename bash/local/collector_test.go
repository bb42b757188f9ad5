package local

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fileSpill(t *testing.T) func() (*os.File, error) {
	dir := t.TempDir()
	return func() (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, "spill.log"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
}

func TestCollectorKeepsTailAndSpillsAll(t *testing.T) {
	c := newCollector(10, fileSpill(t))
	c.Write([]byte("0123456789abcdef"))
	c.finish()
	text, truncated, spill := c.output()
	if text != "6789abcdef" || !truncated || spill == "" {
		t.Fatalf("output %q truncated=%v spill=%q", text, truncated, spill)
	}
	if b, err := os.ReadFile(spill); err != nil || string(b) != "0123456789abcdef" {
		t.Errorf("spill file %q (%v)", b, err)
	}
}

func TestCollectorIncrementalReads(t *testing.T) {
	c := newCollector(10, fileSpill(t))
	step := func(write, want string, wantLossy bool) {
		t.Helper()
		c.Write([]byte(write))
		text, next, lossy, spill := c.readFrom(c.total - int64(len(write)))
		if text != want || next != c.total || lossy != wantLossy || (spill != "") != wantLossy {
			t.Errorf("after %q: %q next=%d lossy=%v spill=%q", write, text, next, lossy, spill)
		}
	}
	step("aaaaa", "aaaaa", false)
	step("bbbbb", "bbbbb", false)
	step(strings.Repeat("c", 20), strings.Repeat("c", 10), true)

	// Reading from an evicted offset returns the whole window.
	text, _, lossy, _ := c.readFrom(0)
	if text != strings.Repeat("c", 10) || !lossy {
		t.Errorf("readFrom(0) = %q lossy=%v", text, lossy)
	}
}

func TestCollectorAtCapIsNotTruncated(t *testing.T) {
	opened := false
	c := newCollector(500, func() (*os.File, error) { opened = true; return nil, os.ErrInvalid })
	c.Write(bytes.Repeat([]byte("a"), 200))
	c.Write(bytes.Repeat([]byte("a"), 300))
	c.finish()
	if text, truncated, spill := c.output(); len(text) != 500 || truncated || spill != "" || opened {
		t.Errorf("len=%d truncated=%v spill=%q opened=%v", len(text), truncated, spill, opened)
	}
}

// Whatever the chunking, the ring holds exactly the stream's last max bytes
// and the spill file the whole stream.
func TestCollectorRingMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		limit := 1 + r.IntN(64)
		c := newCollector(limit, fileSpill(t))
		var all []byte
		for range r.IntN(40) {
			chunk := make([]byte, r.IntN(2*limit+1))
			for i := range chunk {
				chunk[i] = 'a' + byte(r.IntN(26))
			}
			all = append(all, chunk...)
			c.Write(chunk)
		}
		c.finish()
		text, truncated, spill := c.output()
		want := all[max(0, len(all)-limit):]
		if text != string(want) || truncated != (len(all) > limit) {
			t.Fatalf("round %d (max %d): tail %q truncated=%v, want %q", round, limit, text, truncated, want)
		}
		if truncated {
			if b, err := os.ReadFile(spill); err != nil || !bytes.Equal(b, all) {
				t.Fatalf("round %d: spill file differs from the stream (%v)", round, err)
			}
		}
	}
}

// A broken spill withdraws the path but keeps the tail.
func TestCollectorSpillFailureWithdrawsPath(t *testing.T) {
	c := newCollector(4, func() (*os.File, error) { return nil, os.ErrPermission })
	c.Write([]byte("abcdefgh"))
	c.finish()
	if text, truncated, spill := c.output(); text != "efgh" || !truncated || spill != "" {
		t.Errorf("output %q truncated=%v spill=%q", text, truncated, spill)
	}
	// A spill file that cannot be written is withdrawn too.
	ro, err := os.Open(os.DevNull) // read-only: writes fail
	if err != nil {
		t.Fatal(err)
	}
	c = newCollector(4, func() (*os.File, error) { return ro, nil })
	c.Write([]byte("abcdefgh"))
	c.finish()
	if _, _, spill := c.output(); spill != "" {
		t.Errorf("unwritable spill offered as %q", spill)
	}
}

func TestCollectorUTF8Edges(t *testing.T) {
	// A delta never ends inside a character while the stream is open…
	c := newCollector(100, nil)
	euro := []byte("€") // 3 bytes
	c.Write(append([]byte("x"), euro[:2]...))
	text, next, _, _ := c.readFrom(0)
	if text != "x" || next != 1 {
		t.Errorf("partial char: %q next=%d", text, next)
	}
	c.Write(euro[2:])
	if text, next, _, _ = c.readFrom(next); text != "€" || next != 4 {
		t.Errorf("completed char: %q next=%d", text, next)
	}
	// …but at the end of the stream a broken sequence is shown as U+FFFD.
	c.Write(euro[:1])
	c.finish()
	if text, _, _, _ = c.readFrom(next); text != "\uFFFD" {
		t.Errorf("dangling byte at the end: %q", text)
	}
	// A tail cut inside a character drops the partial character.
	c = newCollector(4, nil)
	c.Write([]byte("a€€"))                     // 7 bytes; the last 4 are "\xac€"
	if text, _, _ := c.output(); text != "€" { // the orphaned continuation byte is dropped
		t.Errorf("tail cut: %q", text)
	}
}
