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
		text, next, lossy, spill, _ := c.readFrom(c.total - int64(len(write)))
		if text != want || next != c.total || lossy != wantLossy || (spill != "") != wantLossy {
			t.Errorf("after %q: %q next=%d lossy=%v spill=%q", write, text, next, lossy, spill)
		}
	}
	step("aaaaa", "aaaaa", false)
	step("bbbbb", "bbbbb", false)
	step(strings.Repeat("c", 20), strings.Repeat("c", 10), true)

	// Reading from an evicted offset returns the whole window.
	text, _, lossy, _, _ := c.readFrom(0)
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
	text, next, _, _, _ := c.readFrom(0)
	if text != "x" || next != 1 {
		t.Errorf("partial char: %q next=%d", text, next)
	}
	c.Write(euro[2:])
	if text, next, _, _, _ = c.readFrom(next); text != "€" || next != 4 {
		t.Errorf("completed char: %q next=%d", text, next)
	}
	// …but at the end of the stream a broken sequence is shown as U+FFFD.
	c.Write(euro[:1])
	c.finish()
	if text, _, _, _, _ = c.readFrom(next); text != "\uFFFD" {
		t.Errorf("dangling byte at the end: %q", text)
	}
	// A tail cut inside a character drops the partial character.
	c = newCollector(4, nil)
	c.Write([]byte("a€€"))                     // 7 bytes; the last 4 are "\xac€"
	if text, _, _ := c.output(); text != "€" { // the orphaned continuation byte is dropped
		t.Errorf("tail cut: %q", text)
	}
}

func binaryBlob(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// Output that is not text is not decoded: the result says how big it was
// and names a file holding all of it, whether it fit in memory or not.
func TestCollectorBinaryOutput(t *testing.T) {
	for _, n := range []int{15632, 200_000} {
		blob := binaryBlob(n)
		c := newCollector(64000, fileSpill(t))
		c.Write(blob[:n/2])
		c.Write(blob[n/2:])
		c.finish()
		o := c.collected()
		if !o.Binary || o.Text != "" || o.Size != int64(n) || o.SpillPath == "" {
			t.Fatalf("%d bytes: %+v", n, o)
		}
		if b, err := os.ReadFile(o.SpillPath); err != nil || !bytes.Equal(b, blob) {
			t.Fatalf("%d bytes: the spill file holds %d bytes (%v)", n, len(b), err)
		}
	}
	// Text stays text: escape sequences, tabs, a Latin-1 word, UTF-8.
	for _, s := range []string{"\x1b[1;31merror\x1b[0m\tat line 3\r\n", "caf\xe9\n", strings.Repeat("héllo wörld 世界\n", 100)} {
		c := newCollector(64000, fileSpill(t))
		c.Write([]byte(s))
		c.finish()
		if o := c.collected(); o.Binary || o.SpillPath != "" || o.Text == "" {
			t.Errorf("%q: %+v", s, o)
		}
	}
	// Without a spill directory the result still says what there was.
	c := newCollector(64000, nil)
	c.Write(binaryBlob(1000))
	c.finish()
	if o := c.collected(); !o.Binary || o.Size != 1000 || o.SpillPath != "" {
		t.Fatalf("no spill: %+v", o)
	}
}

// A background task's binary output: each read reports the bytes since the
// last one, and the spill file (opened at the first binary read) keeps
// receiving what the task prints after it.
func TestCollectorBinaryReads(t *testing.T) {
	blob := binaryBlob(3000)
	c := newCollector(64000, fileSpill(t))
	c.Write(blob[:1000])
	text, next, _, spill, n := c.readFrom(0)
	if text != "" || n != 1000 || next != 1000 || spill == "" {
		t.Fatalf("first read: %q next %d spill %q binary %d", text, next, spill, n)
	}
	c.Write(blob[1000:])
	c.finish()
	if _, next, _, _, n = c.readFrom(next); n != 2000 || next != 3000 {
		t.Fatalf("second read: next %d binary %d", next, n)
	}
	if b, err := os.ReadFile(spill); err != nil || !bytes.Equal(b, blob) {
		t.Fatalf("the spill file holds %d bytes (%v)", len(b), err)
	}
}
