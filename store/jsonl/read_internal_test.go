package jsonl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lineBack finds a line k lines before a known one by counting newlines
// backwards, across its read buffer's edges and past lines longer than it.
func TestLineBack(t *testing.T) {
	var b strings.Builder
	var offs []int64
	b.WriteString(`{"header":true}` + "\n")
	for i := range 300 {
		offs = append(offs, int64(b.Len()))
		n := 10 + i*37%500
		if i%50 == 7 {
			n = 200 << 10 // longer than the buffer
		}
		b.WriteString(strings.Repeat("x", n) + "\n")
	}
	p := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{299, 150, 8, 1} {
		for k := 0; k <= at; k++ {
			if got := lineBack(p, offs[at], int64(k)); got != offs[at-k] {
				t.Fatalf("%d lines before line %d: offset %d, want %d", k, at, got, offs[at-k])
			}
		}
	}
	// Past the first line lies the header, whose start has no newline
	// before it: not an event line.
	if got := lineBack(p, offs[3], 5); got != -1 {
		t.Fatalf("5 lines before line 3: %d, want -1", got)
	}
}
