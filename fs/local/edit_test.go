package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/fs"
)

func TestEditLineEndings(t *testing.T) {
	p, dir := newProvider(t, Options{})
	cases := []struct {
		name, content string
		edit          fs.Edit
		want          string
		before, after string
	}{
		{"crlf stays crlf", "one\r\ntwo\r\n", fs.Edit{Old: "two", New: "TWO"},
			"one\r\nTWO\r\n", "one\ntwo\n", "one\nTWO\n"},
		{"lf old text matches crlf", "a\r\nb\r\nc\r\n", fs.Edit{Old: "a\nb\n", New: "x\ny\nz\n"},
			"x\r\ny\r\nz\r\nc\r\n", "a\nb\nc\n", "x\ny\nz\nc\n"},
		{"crlf old text matches crlf", "a\r\nb\r\n", fs.Edit{Old: "a\r\nb", New: "ab"},
			"ab\r\n", "a\nb\n", "ab\n"},
		{"crlf new text into lf file", "a\nb\n", fs.Edit{Old: "a\n", New: "x\r\ny\r\n"},
			"x\ny\nb\n", "a\nb\n", "x\ny\nb\n"},
		// Mixed: the dominant style is CRLF; the lone LF line is not touched.
		{"untouched lines keep their endings", "a\r\nb\nc\r\nd\r\n", fs.Edit{Old: "d", New: "D1\nD2"},
			"a\r\nb\nc\r\nD1\r\nD2\r\n", "a\nb\nc\nd\n", "a\nb\nc\nD1\nD2\n"},
		{"tie goes to lf", "a\r\nb\n", fs.Edit{Old: "b", New: "b1\nb2"},
			"a\r\nb1\nb2\n", "a\nb\n", "a\nb1\nb2\n"},
		{"bom preserved", "\ufeffhello world\r\n", fs.Edit{Old: "world", New: "there"},
			"\ufeffhello there\r\n", "hello world\n", "hello there\n"},
		{"replace all across endings", "x\r\nx\nx", fs.Edit{Old: "x", New: "y", ReplaceAll: true},
			"y\r\ny\ny", "x\nx\nx", "y\ny\ny"},
		{"lone cr kept", "a\rb\r\n", fs.Edit{Old: "b", New: "B"}, "a\rB\r\n", "a\rb\n", "a\rB\n"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(dir, "f"+string(rune('a'+i)))
			writeFile(t, name, c.content, 0o644)
			res, err := p.Edit(context.Background(), resolve(t, p, dir, name), c.edit, nil)
			must(t, err)
			if got := readFile(t, name); got != c.want {
				t.Fatalf("bytes = %q, want %q", got, c.want)
			}
			if res.Before != c.before || res.After != c.after {
				t.Fatalf("before/after = %q / %q, want %q / %q", res.Before, res.After, c.before, c.after)
			}
		})
	}
}

func TestEditKeepsPermissionsAndReportsVersion(t *testing.T) {
	p, dir := newProvider(t, Options{})
	name := filepath.Join(dir, "run.sh")
	writeFile(t, name, "echo hi\n", 0o750)
	tg := resolve(t, p, dir, "run.sh")
	res, err := p.Edit(context.Background(), tg, fs.Edit{Old: "hi", New: "there"}, nil)
	must(t, err)
	if m := mode(t, name); m != 0o750 {
		t.Fatalf("mode = %o, want 750", m)
	}
	if res.Replacements != 1 || res.Version != statVersion(t, p, tg) {
		t.Fatalf("result = %+v", res)
	}
	noLitter(t, dir)
}

func TestEditMatching(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	name := filepath.Join(dir, "f")
	writeFile(t, name, "a a a", 0o644)
	tg := resolve(t, p, dir, "f")

	_, err := p.Edit(ctx, tg, fs.Edit{Old: "a", New: "b"}, nil)
	fe := wantCode(t, err, fs.CodeAmbiguousEdit)
	if !strings.Contains(fe.Message, "matched 3 times") || !strings.Contains(fe.Message, "replace_all") {
		t.Fatalf("message = %q", fe.Message)
	}
	if got := readFile(t, name); got != "a a a" {
		t.Fatalf("ambiguous edit changed the file: %q", got)
	}
	_, err = p.Edit(ctx, tg, fs.Edit{Old: "absent", New: "b"}, nil)
	wantCode(t, err, fs.CodeEditNotFound)
	_, err = p.Edit(ctx, tg, fs.Edit{Old: "", New: "b"}, nil)
	wantCode(t, err, fs.CodeEditNotFound)
	_, err = p.Edit(ctx, tg, fs.Edit{Old: "a", New: "a"}, nil)
	wantCode(t, err, fs.CodeNoChange)
	_, err = p.Edit(ctx, tg, fs.Edit{Old: "a\r\n", New: "a\n"}, nil)
	wantCode(t, err, fs.CodeNoChange)

	res, err := p.Edit(ctx, tg, fs.Edit{Old: "a", New: "b", ReplaceAll: true}, nil)
	must(t, err)
	if got := readFile(t, name); got != "b b b" || res.Replacements != 3 {
		t.Fatalf("replace all: %q, %d replacements", got, res.Replacements)
	}
	// Non-overlapping, left to right.
	writeFile(t, name, "aaaa", 0o644)
	res, err = p.Edit(ctx, tg, fs.Edit{Old: "aa", New: "b", ReplaceAll: true}, nil)
	must(t, err)
	if got := readFile(t, name); got != "bb" || res.Replacements != 2 {
		t.Fatalf("overlap: %q, %d", got, res.Replacements)
	}
}

func TestEditRefusals(t *testing.T) {
	p, dir := newProvider(t, Options{MaxFileSize: 100})
	ctx := context.Background()
	writeFile(t, filepath.Join(dir, "bin"), "text\x00more", 0o644)
	writeFile(t, filepath.Join(dir, "latin1"), "caf\xe9 text", 0o644)
	writeFile(t, filepath.Join(dir, "big"), strings.Repeat("text ", 30), 0o644)
	must(t, os.Mkdir(filepath.Join(dir, "dir"), 0o755))
	e := fs.Edit{Old: "text", New: "TEXT"}

	cases := map[string]string{
		"bin":     fs.CodeNotText,
		"latin1":  fs.CodeNotText,
		"big":     fs.CodeTooLarge,
		"dir":     fs.CodeNotRegularFile,
		"missing": fs.CodeNotFound,
	}
	for name, code := range cases {
		before, _ := os.ReadFile(filepath.Join(dir, name))
		_, err := p.Edit(ctx, resolve(t, p, dir, name), e, nil)
		wantCode(t, err, code)
		after, _ := os.ReadFile(filepath.Join(dir, name))
		if string(before) != string(after) {
			t.Fatalf("%s changed by a refused edit", name)
		}
	}
	writeFile(t, filepath.Join(dir, "ok"), "text", 0o644)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := p.Edit(cctx, resolve(t, p, dir, "ok"), e, nil)
	wantCode(t, err, fs.CodeAborted)
	if got := readFile(t, filepath.Join(dir, "ok")); got != "text" {
		t.Fatalf("aborted edit changed the file: %q", got)
	}
}

// TestEditPreconditionBeforeMatching: a refused precondition wins over a
// match failure, so a stale edit never reports "not found" against content
// the caller has not seen.
func TestEditPreconditionBeforeMatching(t *testing.T) {
	p, dir := newProvider(t, Options{})
	writeFile(t, filepath.Join(dir, "f"), "goodbye", 0o644)
	tg := resolve(t, p, dir, "f")
	want := statVersion(t, p, tg)
	stale := errors.New("stale")
	var saw *fs.Version
	_, err := p.Edit(context.Background(), tg, fs.Edit{Old: "world", New: "x"}, func(cur *fs.Version) error {
		saw = cur
		return stale
	})
	if err != stale {
		t.Fatalf("err = %v, want the precondition's", err)
	}
	if saw == nil || *saw != want {
		t.Fatalf("precondition saw %v, want %v", saw, want)
	}
}

// TestConcurrentEdits: two edits based on the same version; exactly one
// lands, the other is refused by its precondition, and the file holds one
// of the two results.
func TestConcurrentEdits(t *testing.T) {
	p, dir := newProvider(t, Options{})
	name := filepath.Join(dir, "f")
	for range 20 {
		writeFile(t, name, "base value here", 0o644)
		tg := resolve(t, p, dir, "f")
		seen := statVersion(t, p, tg)
		stale := errors.New("stale")
		check := func(cur *fs.Version) error {
			if *cur != seen {
				return stale
			}
			return nil
		}
		var wg sync.WaitGroup
		var errA, errB error
		wg.Go(func() { _, errA = p.Edit(context.Background(), tg, fs.Edit{Old: "base", New: "ONE"}, check) })
		wg.Go(func() { _, errB = p.Edit(context.Background(), tg, fs.Edit{Old: "value", New: "TWO"}, check) })
		wg.Wait()
		if (errA == nil) == (errB == nil) {
			t.Fatalf("errA=%v errB=%v: want exactly one failure", errA, errB)
		}
		for _, err := range []error{errA, errB} {
			if err != nil && err != stale {
				t.Fatalf("unexpected error %v", err)
			}
		}
		if got := readFile(t, name); got != "ONE value here" && got != "base TWO here" {
			t.Fatalf("content = %q", got)
		}
	}
}
