package mcp

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// The stdout filter drops lines that cannot start a JSON-RPC message and
// passes messages, batches and pretty-printed values whole, whatever the
// chunking.
func TestLineFilter(t *testing.T) {
	long := `{"text":"` + strings.Repeat("x", 100) + `"}`
	for _, tc := range []struct {
		name, in, out string
		dropped       []string
	}{
		{"banner", "starting…\n{\"id\":1}\n", "{\"id\":1}\n", []string{"starting…"}},
		{"log lines", "[INFO] ready\r\n[{\"id\":1}]\n[ ]\n[2024-01-01] up\n", "[{\"id\":1}]\n[ ]\n", []string{"[INFO] ready", "[2024-01-01] up"}},
		{"pretty-printed", "{\n  \"a\": \"x\\\"}\\n[\",\n  \"b\": [\n    1\n  ]\n}\nnoise\n{}\n",
			"{\n  \"a\": \"x\\\"}\\n[\",\n  \"b\": [\n    1\n  ]\n}\n{}\n", []string{"noise"}},
		{"batch across lines", "[\n  {\"id\":1}\n]\n", "[\n  {\"id\":1}\n]\n", nil},
		{"blanks", "  {\"id\":1}\n\n\tready\n", "  {\"id\":1}\n\n\t", []string{"ready"}},
		{"long lines", strings.Repeat("b", 100) + "\n" + long + "\n", long + "\n", []string{strings.Repeat("b", 100)}},
		{"no newline at the end", "{\"id\":1}\nbye", "{\"id\":1}\n", []string{"bye"}},
		{"nothing to drop", "{\"id\":1}\n{\"id\":2}\n", "{\"id\":1}\n{\"id\":2}\n", nil},
	} {
		for _, size := range []int{16, 4096} {
			var dropped []string
			f := &lineFilter{r: bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(tc.in)), size), drop: func(n int, line []byte) {
				if n != len(dropped)+1 {
					t.Errorf("%s: drop count %d after %d lines", tc.name, n, len(dropped))
				}
				dropped = append(dropped, string(line))
			}}
			got, err := io.ReadAll(iotest.HalfReader(f))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if string(got) != tc.out {
				t.Errorf("%s (buffer %d): passed %q, want %q", tc.name, size, got, tc.out)
			}
			if strings.Join(dropped, "|") != strings.Join(tc.dropped, "|") {
				t.Errorf("%s (buffer %d): dropped %q, want %q", tc.name, size, dropped, tc.dropped)
			}
		}
	}
}
