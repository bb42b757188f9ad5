package fstool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/tool"
)

func TestWriteCreates(t *testing.T) {
	f := newFixture(t, true)
	text, res := f.ok(t, f.write, map[string]any{"file_path": "new.txt", "content": "line one\nline two\n"})
	if got := fileContent(t, f.path("new.txt")); got != "line one\nline two\n" {
		t.Fatalf("content = %q", got)
	}
	if text != "<path>"+f.path("new.txt")+"</path>\n<type>file</type>\n<content>\nCreated file\n</content>" {
		t.Fatalf("text = %q", text)
	}
	var m meta
	if err := json.Unmarshal(res.Meta, &m); err != nil || m.Operation != "create" || len(m.Diffs) != 0 {
		t.Fatalf("meta = %s (%v)", res.Meta, err)
	}
	// Nested directories are created.
	f.ok(t, f.write, map[string]any{"file_path": "a/b/c.txt", "content": ""})
	if got := fileContent(t, f.path("a/b/c.txt")); got != "" {
		t.Fatalf("content = %q", got)
	}
}

func TestWriteRequiresRead(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("a.txt"), "original\n")
	err := f.fail(t, f.write, map[string]any{"file_path": "a.txt", "content": "clobbered\n"})
	wantFsCode(t, err, fs.CodeNotObserved)
	if !strings.Contains(err.Error(), "read it first") {
		t.Fatalf("message = %q", err)
	}
	if fileContent(t, f.path("a.txt")) != "original\n" {
		t.Fatal("refused write changed the file")
	}
	f.ok(t, f.read, map[string]any{"file_path": "a.txt"})
	text, _ := f.ok(t, f.write, map[string]any{"file_path": "a.txt", "content": "second\n"})
	if !strings.Contains(text, "Updated file") || fileContent(t, f.path("a.txt")) != "second\n" {
		t.Fatalf("write after read: %q", text)
	}
	// Changed behind the agent's back: stale until read again.
	writeFile(t, f.path("a.txt"), "external change\n")
	err = f.fail(t, f.write, map[string]any{"file_path": "a.txt", "content": "third\n"})
	wantFsCode(t, err, fs.CodeStale)
	if !strings.Contains(err.Error(), f.path("a.txt")) {
		t.Fatalf("stale error does not name the file: %q", err)
	}
	f.ok(t, f.read, map[string]any{"file_path": "a.txt", "limit": 1})
	f.ok(t, f.write, map[string]any{"file_path": "a.txt", "content": "third\n"})
}

func TestWriteKeepsPermissions(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("run.sh"), "echo a\n")
	if err := os.Chmod(f.path("run.sh"), 0o751); err != nil {
		t.Fatal(err)
	}
	f.ok(t, f.read, map[string]any{"file_path": "run.sh"})
	f.ok(t, f.write, map[string]any{"file_path": "run.sh", "content": "echo b\n"})
	fi, err := os.Stat(f.path("run.sh"))
	if err != nil || fi.Mode().Perm() != 0o751 {
		t.Fatalf("mode = %v (%v), want 0751", fi.Mode(), err)
	}
}

func TestEditRequiresFreshRead(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("a.txt"), "hello world")
	args := map[string]any{"file_path": "a.txt", "old_string": "world", "new_string": "there"}
	wantFsCode(t, f.fail(t, f.edit, args), fs.CodeNotObserved)
	if fileContent(t, f.path("a.txt")) != "hello world" {
		t.Fatal("refused edit changed the file")
	}
	f.ok(t, f.read, map[string]any{"file_path": "a.txt"})
	text, _ := f.ok(t, f.edit, args)
	if text != "The file "+f.path("a.txt")+" has been updated successfully." || fileContent(t, f.path("a.txt")) != "hello there" {
		t.Fatalf("text = %q, content = %q", text, fileContent(t, f.path("a.txt")))
	}
}

func TestEditAfterWindowedReadAndStaleness(t *testing.T) {
	f := newFixture(t, true)
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFile(t, f.path("twenty.txt"), b.String())
	text, _ := f.ok(t, f.read, map[string]any{"file_path": "twenty.txt", "offset": 1, "limit": 1})
	if !strings.Contains(text, "(Showing lines 1-1 of 20. Use offset=2 to continue.)") {
		t.Fatalf("footer: %s", text)
	}
	// Line 12 was not in the window; the read still authorizes the edit.
	f.ok(t, f.edit, map[string]any{"file_path": "twenty.txt", "old_string": "line 12\n", "new_string": "LINE 12\n"})

	writeFile(t, f.path("w.txt"), "hello world")
	f.ok(t, f.read, map[string]any{"file_path": "w.txt", "limit": 1})
	writeFile(t, f.path("w.txt"), "goodbye")
	edit := map[string]any{"file_path": "w.txt", "old_string": "world", "new_string": "there"}
	// Stale, not "not found": the agent has not seen "goodbye".
	wantFsCode(t, f.fail(t, f.edit, edit), fs.CodeStale)
	wantFsCode(t, f.fail(t, f.edit, edit), fs.CodeStale) // still, until a re-read
	f.ok(t, f.read, map[string]any{"file_path": "w.txt"})
	err := f.fail(t, f.edit, edit)
	wantFsCode(t, err, fs.CodeEditNotFound)
	if !strings.Contains(err.Error(), "exact") {
		t.Fatalf("no hint: %q", err)
	}
	f.ok(t, f.edit, map[string]any{"file_path": "w.txt", "old_string": "goodbye", "new_string": "hi"})
}

func TestEditAmbiguous(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("twice.go"), "x := 1\ny := 2\nx := 1\n")
	f.ok(t, f.read, map[string]any{"file_path": "twice.go"})
	err := f.fail(t, f.edit, map[string]any{"file_path": "twice.go", "old_string": "x := 1", "new_string": "x := 3"})
	wantFsCode(t, err, fs.CodeAmbiguousEdit)
	if !strings.Contains(err.Error(), "old_string matched 2 times in \""+f.path("twice.go")+"\"") {
		t.Fatalf("message = %q", err)
	}
	// More context makes it unique.
	f.ok(t, f.edit, map[string]any{"file_path": "twice.go", "old_string": "y := 2\nx := 1", "new_string": "y := 2\nx := 3"})
	if got := fileContent(t, f.path("twice.go")); got != "x := 1\ny := 2\nx := 3\n" {
		t.Fatalf("content = %q", got)
	}

	writeFile(t, f.path("a.txt"), "a a a")
	f.ok(t, f.read, map[string]any{"file_path": "a.txt"})
	err = f.fail(t, f.edit, map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b"})
	wantFsCode(t, err, fs.CodeAmbiguousEdit)
	for _, s := range []string{"matched 3 times", "more specific", "replace_all"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("message %q lacks %q", err, s)
		}
	}
	if fileContent(t, f.path("a.txt")) != "a a a" {
		t.Fatal("file changed")
	}
	text, res := f.ok(t, f.edit, map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": true})
	if fileContent(t, f.path("a.txt")) != "b b b" || !strings.HasSuffix(text, "All 3 occurrences were successfully replaced.") {
		t.Fatalf("replace_all: %q", text)
	}
	var m meta
	if err := json.Unmarshal(res.Meta, &m); err != nil || m.Replacements != 3 || m.Operation != "edit" {
		t.Fatalf("meta = %s", res.Meta)
	}
}

func TestEditArgumentErrors(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("a.txt"), "x")
	wantPlain(t, f.fail(t, f.edit, map[string]any{"file_path": " ", "old_string": "a", "new_string": "b"}),
		"file_path must be a non-empty string")
	wantPlain(t, f.fail(t, f.edit, map[string]any{"file_path": "a.txt", "old_string": "", "new_string": "b"}),
		"old_string must be a non-empty string (to create a file, use write)")
	wantPlain(t, f.fail(t, f.edit, map[string]any{"file_path": "a.txt", "old_string": "x", "new_string": "x"}),
		"old_string and new_string must differ")
	wantCode(t, f.fail(t, f.edit, map[string]any{"file_path": "a.txt", "old_string": "x"}), "INVALID_ARGS")
	wantCode(t, f.fail(t, f.write, map[string]any{"file_path": "a.txt"}), "INVALID_ARGS")
	// A CRLF-only difference is caught by the provider.
	f.ok(t, f.read, map[string]any{"file_path": "a.txt"})
	wantFsCode(t, f.fail(t, f.edit, map[string]any{"file_path": "a.txt", "old_string": "x\r\n", "new_string": "x\n"}), fs.CodeNoChange)
}

func TestEditLineNumberHint(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("a.go"), "package a\n\nfunc A() {}\n")
	f.ok(t, f.read, map[string]any{"file_path": "a.go"})
	err := f.fail(t, f.edit, map[string]any{"file_path": "a.go", "old_string": "     3\tfunc A() {}", "new_string": "func B() {}"})
	wantFsCode(t, err, fs.CodeEditNotFound)
	if !strings.Contains(err.Error(), "line-number prefixes") {
		t.Fatalf("message = %q", err)
	}
}

func TestWriteThenEditWithoutRead(t *testing.T) {
	f := newFixture(t, true)
	f.ok(t, f.write, map[string]any{"file_path": "a.txt", "content": "one two"})
	f.ok(t, f.edit, map[string]any{"file_path": "a.txt", "old_string": "two", "new_string": "three"})
	f.ok(t, f.edit, map[string]any{"file_path": "a.txt", "old_string": "three", "new_string": "four"})
	f.ok(t, f.write, map[string]any{"file_path": "a.txt", "content": "five"})
	if got := fileContent(t, f.path("a.txt")); got != "five" {
		t.Fatalf("content = %q", got)
	}
}

func TestOwnersAreSeparate(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("a.txt"), "shared")
	f.ok(t, f.read, map[string]any{"file_path": "a.txt"})
	child := newHost("agent-2", f.dir)
	_, err := call(t, context.Background(), f.edit, child, map[string]any{"file_path": "a.txt", "old_string": "shared", "new_string": "mine"})
	wantFsCode(t, err, fs.CodeNotObserved)
	_, err = call(t, context.Background(), f.edit, nil, map[string]any{"file_path": "a.txt", "old_string": "shared", "new_string": "mine"})
	wantFsCode(t, err, fs.CodeNotObserved)
	// Without an agent, new files can still be created.
	if _, err := call(t, context.Background(), f.write, nil, map[string]any{"file_path": "fresh.txt", "content": "x"}); err != nil {
		t.Fatal(err)
	}
	// The agent going away forgets what it read.
	if err := f.host.scope.Close(); err != nil {
		t.Fatal(err)
	}
	if f.tr.Owners() != 0 {
		t.Fatalf("%d owners recorded after the agent's scope closed", f.tr.Owners())
	}
}

func TestSymlinkedPathsShareAuthorization(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("real/a.txt"), "x y")
	if err := os.Symlink(f.path("real"), f.path("link")); err != nil {
		t.Fatal(err)
	}
	f.ok(t, f.read, map[string]any{"file_path": "link/a.txt"})
	f.ok(t, f.edit, map[string]any{"file_path": "real/a.txt", "old_string": "x", "new_string": "z"})
	if fi, err := os.Lstat(f.path("link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("symlink replaced")
	}
	if got := fileContent(t, f.path("real/a.txt")); got != "z y" {
		t.Fatalf("content = %q", got)
	}
}

func TestEditCRLFAndBOM(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("win.txt"), "\ufeffone\r\ntwo\r\nthree\r\n")
	text, _ := f.ok(t, f.read, map[string]any{"file_path": "win.txt"})
	if !strings.Contains(text, "     1\tone\n     2\ttwo\n") {
		t.Fatalf("read shows CR or BOM:\n%q", text)
	}
	_, res := f.ok(t, f.edit, map[string]any{"file_path": "win.txt", "old_string": "one\ntwo\n", "new_string": "ONE\nTWO\nextra\n"})
	if got := fileContent(t, f.path("win.txt")); got != "\ufeffONE\r\nTWO\r\nextra\r\nthree\r\n" {
		t.Fatalf("bytes = %q", got)
	}
	// Diffs are LF-based.
	d := diffsFromMeta(res.Meta)
	if len(d) != 1 || d[0].OldText == nil || *d[0].OldText != "one\ntwo\nthree" || d[0].NewText != "ONE\nTWO\nextra\nthree" {
		t.Fatalf("diffs = %+v", d)
	}
}

func TestSessionCwd(t *testing.T) {
	f := newFixture(t, true)
	other := t.TempDir()
	p, err := local.New(local.Options{Cwd: other}) // provider default D
	if err != nil {
		t.Fatal(err)
	}
	ts := Tools(p, f.tr, Options{})
	host := newHost("agent-1", f.dir) // session cwd S
	if _, err := call(t, context.Background(), ts[1], host, map[string]any{"file_path": "note.txt", "content": "n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.path("note.txt")); err != nil {
		t.Fatal("note.txt not written in the session cwd")
	}
	if _, err := os.Stat(filepath.Join(other, "note.txt")); err == nil {
		t.Fatal("note.txt written in the provider's default cwd")
	}
}

func TestBareProvider(t *testing.T) {
	f := newFixture(t, false)
	writeFile(t, f.path("a.txt"), "unread")
	f.ok(t, f.write, map[string]any{"file_path": "a.txt", "content": "overwritten"})
	f.ok(t, f.edit, map[string]any{"file_path": "a.txt", "old_string": "over", "new_string": "re"})
	if got := fileContent(t, f.path("a.txt")); got != "rewritten" {
		t.Fatalf("content = %q", got)
	}
	err := f.fail(t, f.edit, map[string]any{"file_path": "missing.txt", "old_string": "a", "new_string": "b"})
	wantFsCode(t, err, fs.CodeNotFound)
	if !strings.Contains(err.Error(), "use write to create it") {
		t.Fatalf("message = %q", err)
	}
	wantFsCode(t, f.fail(t, f.edit, map[string]any{"file_path": "a.txt", "old_string": "absent", "new_string": "b"}), fs.CodeEditNotFound)
}

// countingProvider counts Stat calls.
type countingProvider struct {
	fs.Provider
	stats atomic.Int32
}

func (c *countingProvider) Stat(ctx context.Context, t fs.Target) (*fs.Info, error) {
	c.stats.Add(1)
	return c.Provider.Stat(ctx, t)
}

// TestNoSeparateStat: the tools never stat before acting. Read takes the
// version from the file it opened, and write and edit leave the freshness
// check to the provider's critical section, so there is no stat-then-act
// race to lose.
func TestNoSeparateStat(t *testing.T) {
	f := newFixture(t, true)
	cp := &countingProvider{Provider: f.p}
	ts := Tools(cp, f.tr, Options{})
	writeFile(t, f.path("a.txt"), "one")
	for i, args := range []map[string]any{
		{"file_path": "a.txt"},
		{"file_path": "a.txt", "content": "two"},
		{"file_path": "a.txt", "old_string": "two", "new_string": "three"},
	} {
		if _, err := call(t, context.Background(), ts[i], f.host, args); err != nil {
			t.Fatal(err)
		}
	}
	if n := cp.stats.Load(); n != 0 {
		t.Fatalf("%d Stat calls", n)
	}
}

// barrierProvider holds every Edit until n of them have started, so
// concurrent calls really overlap.
type barrierProvider struct {
	fs.Provider
	arrived sync.WaitGroup
}

func (b *barrierProvider) Edit(ctx context.Context, t fs.Target, e fs.Edit, check fs.Precondition) (fs.EditResult, error) {
	b.arrived.Done()
	b.arrived.Wait()
	return b.Provider.Edit(ctx, t, e, check)
}

// TestConcurrentEditsAfterOneRead: two overlapping edits based on one read;
// exactly one lands and the other is refused as stale, because each call's
// precondition is the version the agent had seen when the call began.
func TestConcurrentEditsAfterOneRead(t *testing.T) {
	for range 10 {
		f := newFixture(t, true)
		bp := &barrierProvider{Provider: f.p}
		bp.arrived.Add(2)
		ts := Tools(bp, f.tr, Options{})
		read, edit := ts[0], ts[2]
		writeFile(t, f.path("a.txt"), "base value here")
		if _, err := call(t, context.Background(), read, f.host, map[string]any{"file_path": "a.txt"}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, e := range [][2]string{{"base", "ONE"}, {"value", "TWO"}} {
			wg.Go(func() {
				_, errs[i] = call(t, context.Background(), edit, f.host, map[string]any{"file_path": "a.txt", "old_string": e[0], "new_string": e[1]})
			})
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("errors %v / %v: want exactly one failure", errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil {
				wantFsCode(t, err, fs.CodeStale)
			}
		}
		if got := fileContent(t, f.path("a.txt")); got != "ONE value here" && got != "base TWO here" {
			t.Fatalf("content = %q", got)
		}
	}
}

func TestAbortedCalls(t *testing.T) {
	f := newFixture(t, true)
	writeFile(t, f.path("a.txt"), "keep")
	f.ok(t, f.read, map[string]any{"file_path": "a.txt"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := call(t, ctx, f.write, f.host, map[string]any{"file_path": "new.txt", "content": "x"})
	wantFsCode(t, err, fs.CodeAborted)
	if _, err := os.Stat(f.path("new.txt")); !os.IsNotExist(err) {
		t.Fatal("aborted write created the file")
	}
	_, err = call(t, ctx, f.edit, f.host, map[string]any{"file_path": "a.txt", "old_string": "keep", "new_string": "lose"})
	wantFsCode(t, err, fs.CodeAborted)
	if fileContent(t, f.path("a.txt")) != "keep" {
		t.Fatal("aborted edit changed the file")
	}
}

func TestResultDiffs(t *testing.T) {
	f := newFixture(t, true)
	const before = "a\nb\nc\nOLD\nd\ne\nf\n"
	wantDiffs := []tool.FileDiff{{Path: "a.txt", OldText: ptr("a\nb\nc\nOLD\nd\ne\nf"), NewText: "a\nb\nc\nNEW\nd\ne\nf"}}
	writeFile(t, f.path("a.txt"), before)
	f.ok(t, f.read, map[string]any{"file_path": "a.txt"})
	editArgs := map[string]any{"file_path": "a.txt", "old_string": "OLD", "new_string": "NEW"}
	_, res := f.ok(t, f.edit, editArgs)
	if got := diffsFromMeta(res.Meta); !equalDiffs(got, wantDiffs) {
		t.Fatalf("edit diffs = %s", res.Meta)
	}
	var m meta
	if err := json.Unmarshal(res.Meta, &m); err != nil {
		t.Fatal(err)
	}
	wantUnified := "--- a.txt\n+++ a.txt\n@@ -1,7 +1,7 @@\n a\n b\n c\n-OLD\n+NEW\n d\n e\n f\n"
	if m.Unified != wantUnified {
		t.Fatalf("unified:\n%s\nwant:\n%s", m.Unified, wantUnified)
	}
	rawEdit := mustJSON(t, editArgs)
	v := f.edit.(tool.ResultPresenter).PresentResult(rawEdit, res)
	if v == nil || v.Title != "Edit a.txt" || v.Kind != tool.KindEdit || !equalDiffs(v.Diffs, wantDiffs) {
		t.Fatalf("edit view = %+v", v)
	}
	if v := f.edit.(tool.ResultPresenter).PresentResult(rawEdit, tool.Result{Meta: json.RawMessage(`{"diffs":[{"oldText":1}]}`)}); v != nil {
		t.Fatalf("malformed meta → %+v, want nil", v)
	}
	if v := f.edit.(tool.ResultPresenter).PresentResult(rawEdit, tool.Result{IsError: true}); v != nil {
		t.Fatal("error result presented")
	}

	// The same change by overwrite gives the same hunk.
	writeFile(t, f.path("b.txt"), before)
	f.ok(t, f.read, map[string]any{"file_path": "b.txt"})
	writeArgs := map[string]any{"file_path": "b.txt", "content": strings.Replace(before, "OLD", "NEW", 1)}
	_, res = f.ok(t, f.write, writeArgs)
	wantB := []tool.FileDiff{{Path: "b.txt", OldText: wantDiffs[0].OldText, NewText: wantDiffs[0].NewText}}
	if got := diffsFromMeta(res.Meta); !equalDiffs(got, wantB) {
		t.Fatalf("write diffs = %s", res.Meta)
	}
	wp := f.write.(tool.ResultPresenter)
	if v := wp.PresentResult(mustJSON(t, writeArgs), res); v == nil || !equalDiffs(v.Diffs, wantB) {
		t.Fatalf("write view = %+v", v)
	}

	// A create, an identical overwrite and malformed meta all fall back to
	// the whole file.
	createArgs := map[string]any{"file_path": "new.txt", "content": "fresh\n"}
	_, res = f.ok(t, f.write, createArgs)
	whole := []tool.FileDiff{{Path: "new.txt", NewText: "fresh\n"}}
	if v := wp.PresentResult(mustJSON(t, createArgs), res); v == nil || v.Title != "Write new.txt" || !equalDiffs(v.Diffs, whole) {
		t.Fatalf("create view = %+v", v)
	}
	_, res = f.ok(t, f.write, createArgs)
	if d := diffsFromMeta(res.Meta); d != nil {
		t.Fatalf("identical overwrite has hunks: %+v", d)
	}
	if v := wp.PresentResult(mustJSON(t, createArgs), res); v == nil || !equalDiffs(v.Diffs, whole) {
		t.Fatalf("identical overwrite view = %+v", v)
	}
	if v := wp.PresentResult(mustJSON(t, createArgs), tool.Result{Meta: json.RawMessage(`[1]`)}); v == nil || !equalDiffs(v.Diffs, whole) {
		t.Fatalf("malformed meta view = %+v", v)
	}
	if v := wp.PresentResult(mustJSON(t, createArgs), tool.Result{IsError: true}); v != nil {
		t.Fatal("error result presented")
	}
}

func TestWriteEditPresentCall(t *testing.T) {
	f := newFixture(t, true)
	v := f.write.(tool.CallPresenter).PresentCall(json.RawMessage(`{"file_path":"a.txt","content":"hi\n"}`))
	if v == nil || v.Title != "Write a.txt" || v.Kind != tool.KindEdit ||
		!equalDiffs(v.Diffs, []tool.FileDiff{{Path: "a.txt", NewText: "hi\n"}}) || v.Locations[0].Path != "a.txt" {
		t.Fatalf("write call view = %+v", v)
	}
	ep := f.edit.(tool.CallPresenter)
	v = ep.PresentCall(json.RawMessage(`{"file_path":"a.txt","old_string":"x","new_string":"y"}`))
	if v == nil || v.Title != "Edit a.txt" || !equalDiffs(v.Diffs, []tool.FileDiff{{Path: "a.txt", OldText: ptr("x"), NewText: "y"}}) {
		t.Fatalf("edit call view = %+v", v)
	}
	v = ep.PresentCall(json.RawMessage(`{"file_path":"a.txt","old_string":"","new_string":"y"}`))
	if v == nil || v.Diffs[0].OldText != nil {
		t.Fatalf("empty old_string view = %+v", v)
	}
	for _, bad := range []string{`{"file_path":"a.txt"}`, `{"content":"x"}`, `[]`, `{`} {
		if f.write.(tool.CallPresenter).PresentCall(json.RawMessage(bad)) != nil || ep.PresentCall(json.RawMessage(bad)) != nil {
			t.Fatalf("%s presented", bad)
		}
	}
}

func ptr(s string) *string { return &s }

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func equalDiffs(a, b []tool.FileDiff) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path || a[i].NewText != b[i].NewText || (a[i].OldText == nil) != (b[i].OldText == nil) ||
			(a[i].OldText != nil && *a[i].OldText != *b[i].OldText) {
			return false
		}
	}
	return true
}
