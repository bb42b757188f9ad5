package local

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dshq/dsh/fs"
)

func readWindow(t *testing.T, p *Provider, tg fs.Target, req fs.ReadRequest) fs.Window {
	t.Helper()
	w, err := p.ReadLines(context.Background(), tg, req)
	if err != nil {
		t.Fatalf("ReadLines(%+v): %v", req, err)
	}
	return w
}

func texts(w fs.Window) []string {
	var out []string
	for _, l := range w.Lines {
		out = append(out, fmt.Sprintf("%d:%s", l.Number, l.Text))
	}
	return out
}

func TestReadLinesWindows(t *testing.T) {
	p, dir := newProvider(t, Options{})
	all := fs.ReadRequest{CountLimit: 1 << 30}
	cases := []struct {
		name    string
		content string
		req     fs.ReadRequest
		want    []string
		total   int
		more    bool
	}{
		{"middle window", "one\ntwo\nthree\nfour", fs.ReadRequest{Offset: 2, Limit: 2, CountLimit: 1 << 30},
			[]string{"2:two", "3:three"}, 4, true},
		{"trailing newline adds no line", "one\ntwo\n", all, []string{"1:one", "2:two"}, 2, false},
		{"crlf stripped", "one\r\ntwo\r\n", all, []string{"1:one", "2:two"}, 2, false},
		{"only one cr stripped", "a\r\r\nb\rc\n", all, []string{"1:a\r", "2:b\rc"}, 2, false},
		{"empty lines", "a\n\n", all, []string{"1:a", "2:"}, 2, false},
		{"empty file", "", all, nil, 0, false},
		{"offset past end", "one\ntwo", fs.ReadRequest{Offset: 9, CountLimit: 1 << 30}, nil, 2, false},
		{"bom stripped", "\ufeffhello\nworld", all, []string{"1:hello", "2:world"}, 2, false},
		{"window ends at last line", "a\nb\nc\n", fs.ReadRequest{Offset: 2, Limit: 2, CountLimit: 1 << 30},
			[]string{"2:b", "3:c"}, 3, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(dir, fmt.Sprintf("f%d", i))
			writeFile(t, name, c.content, 0o644)
			w := readWindow(t, p, resolve(t, p, dir, name), c.req)
			if !slices.Equal(texts(w), c.want) || w.TotalLines != c.total || w.More != c.more || !w.Complete {
				t.Fatalf("got %q total=%d more=%v complete=%v; want %q total=%d more=%v",
					texts(w), w.TotalLines, w.More, w.Complete, c.want, c.total, c.more)
			}
			if w.BOM != strings.HasPrefix(c.content, "\ufeff") {
				t.Fatalf("BOM = %v", w.BOM)
			}
		})
	}
}

func TestReadLinesTruncatesLongLines(t *testing.T) {
	p, dir := newProvider(t, Options{})
	long := strings.Repeat("é", 3000) // two bytes a rune: cut by characters, not bytes
	writeFile(t, filepath.Join(dir, "f"), "short\n"+long+"\n"+strings.Repeat("x", 10)+"\r\n", 0o644)
	w := readWindow(t, p, resolve(t, p, dir, "f"), fs.ReadRequest{MaxLineLength: 2000, CountLimit: 1 << 30})
	if len(w.Lines) != 3 {
		t.Fatalf("lines = %d", len(w.Lines))
	}
	l := w.Lines[1]
	if !l.Truncated || utf8.RuneCountInString(l.Text) != 2000 || l.Text != strings.Repeat("é", 2000) {
		t.Fatalf("long line: truncated=%v runes=%d", l.Truncated, utf8.RuneCountInString(l.Text))
	}
	if w.Lines[0].Truncated || w.Lines[2].Truncated || w.Lines[2].Text != strings.Repeat("x", 10) {
		t.Fatalf("short lines = %+v %+v", w.Lines[0], w.Lines[2])
	}
	if w.InvalidUTF8 {
		t.Fatal("a cut at a character boundary reported invalid UTF-8")
	}
}

func TestReadLinesGiantLineStaysBounded(t *testing.T) {
	p, dir := newProvider(t, Options{})
	// 8 MiB without a newline, then one more line.
	writeFile(t, filepath.Join(dir, "f"), strings.Repeat("y", 8<<20)+"\nend\n", 0o644)
	w := readWindow(t, p, resolve(t, p, dir, "f"), fs.ReadRequest{MaxLineLength: 100, CountLimit: 1 << 30})
	if got := texts(w); len(got) != 2 || got[1] != "2:end" || len(w.Lines[0].Text) != 100 || !w.Lines[0].Truncated {
		t.Fatalf("got %d lines, first %d bytes", len(got), len(w.Lines[0].Text))
	}
}

func TestReadLinesByteCap(t *testing.T) {
	p, dir := newProvider(t, Options{})
	var b strings.Builder
	for range 2000 {
		b.WriteString(strings.Repeat("y", 100) + "\n")
	}
	writeFile(t, filepath.Join(dir, "f"), b.String(), 0o644)
	w := readWindow(t, p, resolve(t, p, dir, "f"), fs.ReadRequest{Limit: 2000, MaxBytes: 51200, CountLimit: 1 << 30})
	// 100 bytes + 1 separator each: 507 lines fit in 51200 (507*101-1 = 51206 > 51200, so 506).
	if !w.Capped || !w.More || w.Complete || len(w.Lines) != 506 {
		t.Fatalf("capped=%v more=%v complete=%v lines=%d", w.Capped, w.More, w.Complete, len(w.Lines))
	}
	// The first line is returned even when it alone exceeds the cap.
	w = readWindow(t, p, resolve(t, p, dir, "f"), fs.ReadRequest{Offset: 3, Limit: 10, MaxBytes: 10})
	if len(w.Lines) != 1 || w.Lines[0].Number != 3 || !w.Capped {
		t.Fatalf("tiny cap: %d lines, capped=%v", len(w.Lines), w.Capped)
	}
}

func TestReadLinesInvalidUTF8IsReplaced(t *testing.T) {
	p, dir := newProvider(t, Options{})
	writeFile(t, filepath.Join(dir, "f"), "caf\xe9\nok\n\xff\xfe\xfd", 0o644)
	w := readWindow(t, p, resolve(t, p, dir, "f"), fs.ReadRequest{CountLimit: 1 << 30})
	want := []string{"1:caf\uFFFD", "2:ok", "3:\uFFFD"} // a run of bad bytes becomes one U+FFFD
	if !slices.Equal(texts(w), want) || !w.InvalidUTF8 {
		t.Fatalf("got %q invalid=%v", texts(w), w.InvalidUTF8)
	}
	w = readWindow(t, p, resolve(t, p, dir, "f"), fs.ReadRequest{Offset: 2, Limit: 1})
	if w.InvalidUTF8 {
		t.Fatal("InvalidUTF8 set for a clean window")
	}
}

func TestReadLinesRefusals(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	writeFile(t, filepath.Join(dir, "bin"), "\x00\x01\x02", 0o644)
	// A NUL after the first 8 KiB is not looked for: reads stay cheap.
	writeFile(t, filepath.Join(dir, "late-nul"), strings.Repeat("a\n", 5000)+"\x00\n", 0o644)
	must(t, os.Mkdir(filepath.Join(dir, "dir"), 0o755))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))

	_, err := p.ReadLines(ctx, resolve(t, p, dir, "bin"), fs.ReadRequest{})
	if fe := wantCode(t, err, fs.CodeNotText); !strings.Contains(fe.Message, "binary file") {
		t.Fatalf("message = %q", fe.Message)
	}
	if _, err := p.ReadLines(ctx, resolve(t, p, dir, "late-nul"), fs.ReadRequest{Limit: 1}); err != nil {
		t.Fatalf("late NUL: %v", err)
	}
	_, err = p.ReadLines(ctx, resolve(t, p, dir, "dir"), fs.ReadRequest{})
	if fe := wantCode(t, err, fs.CodeNotRegularFile); !strings.Contains(fe.Message, "is a directory") {
		t.Fatalf("message = %q", fe.Message)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.ReadLines(ctx, resolve(t, p, dir, "fifo"), fs.ReadRequest{})
		done <- err
	}()
	select {
	case err := <-done:
		wantCode(t, err, fs.CodeNotRegularFile)
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
	_, err = p.ReadLines(ctx, resolve(t, p, dir, "missing"), fs.ReadRequest{})
	wantCode(t, err, fs.CodeNotFound)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = p.ReadLines(cctx, resolve(t, p, dir, "late-nul"), fs.ReadRequest{})
	wantCode(t, err, fs.CodeAborted)
}

// TestReadLinesMatchesReference compares windows of random files, large
// enough to cross the stream buffer many times and full of CRs, long lines
// and multibyte text, with a naive split of the whole file.
func TestReadLinesMatchesReference(t *testing.T) {
	p, dir := newProvider(t, Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "bc", "é", "日本", "\r", "\n", "\r\n", " ", "\n\n", strings.Repeat("z", 700)}
	for i := range 6 {
		var b strings.Builder
		if i%2 == 0 {
			b.WriteString("\ufeff")
		}
		for b.Len() < 600<<10+rng.IntN(300<<10) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		content := b.String()
		name := filepath.Join(dir, fmt.Sprintf("r%d", i))
		writeFile(t, name, content, 0o644)
		ref := refLines(content)
		tg := resolve(t, p, dir, name)
		for range 25 {
			req := fs.ReadRequest{
				Offset:        1 + rng.IntN(len(ref)+2),
				Limit:         1 + rng.IntN(3000),
				MaxLineLength: []int{0, 5, 2000}[rng.IntN(3)],
				CountLimit:    []int64{0, 1 << 30}[rng.IntN(2)],
			}
			w := readWindow(t, p, tg, req)
			want := refWindow(ref, req)
			if !slices.Equal(w.Lines, want) {
				t.Fatalf("file %d %+v: got %d lines, want %d (first diff at %d)", i, req, len(w.Lines), len(want), firstDiff(w.Lines, want))
			}
			last := req.Offset - 1 + len(want)
			if w.More != (last < len(ref)) {
				t.Fatalf("file %d %+v: More=%v with %d of %d lines", i, req, w.More, last, len(ref))
			}
			if w.Complete && w.TotalLines != len(ref) {
				t.Fatalf("file %d %+v: complete with TotalLines=%d, want %d", i, req, w.TotalLines, len(ref))
			}
			if req.CountLimit > 0 && !w.Complete {
				t.Fatalf("file %d %+v: small file not counted", i, req)
			}
		}
	}
}

func refLines(content string) []string {
	content = strings.TrimPrefix(content, "\ufeff")
	if content == "" {
		return nil
	}
	ls := strings.Split(content, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}

func refWindow(ref []string, req fs.ReadRequest) []fs.Line {
	var out []fs.Line
	for i := req.Offset - 1; i < len(ref) && len(out) < req.Limit; i++ {
		l := fs.Line{Number: i + 1, Text: ref[i]}
		if r := []rune(l.Text); req.MaxLineLength > 0 && len(r) > req.MaxLineLength {
			l.Text, l.Truncated = string(r[:req.MaxLineLength]), true
		}
		out = append(out, l)
	}
	return out
}

func firstDiff(a, b []fs.Line) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestReadLinesSparseHugeFile reads windows of a 2 GiB sparse file whose
// first lines are text: the read must cost the window, not the file.
func TestReadLinesSparseHugeFile(t *testing.T) {
	p, dir := newProvider(t, Options{})
	name := filepath.Join(dir, "huge")
	var b bytes.Buffer
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFile(t, name, b.String(), 0o644)
	must(t, os.Truncate(name, 2<<30))
	tg := resolve(t, p, dir, name)

	start := time.Now()
	w := readWindow(t, p, tg, fs.ReadRequest{Offset: 2900, Limit: 50, CountLimit: 16 << 20})
	elapsed := time.Since(start)
	if got := texts(w); len(got) != 50 || got[0] != "2900:line 2900" || got[49] != "2949:line 2949" {
		t.Fatalf("window = %v…", got[:min(3, len(got))])
	}
	// Not scanned past the window: a full scan would have counted the
	// lines to the end and set Complete.
	if w.Complete || !w.More || w.TotalLines != 2949 || w.Size != 2<<30 {
		t.Fatalf("complete=%v more=%v total=%d size=%d", w.Complete, w.More, w.TotalLines, w.Size)
	}
	if elapsed > 2*time.Second {
		t.Fatalf("window read took %v", elapsed)
	}
	// Whole-file operations refuse it at once instead of loading it.
	_, err := p.Edit(context.Background(), tg, fs.Edit{Old: "line 1\n", New: "x\n"}, nil)
	if fe := wantCode(t, err, fs.CodeTooLarge); !strings.Contains(fe.Message, "2 GiB") {
		t.Fatalf("message = %q", fe.Message)
	}
}
