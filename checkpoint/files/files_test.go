package files

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// later is a clock three seconds ahead, so files a test just wrote are
// not "racy" (modified too recently to trust their stat) for the scan.
func later() time.Time { return time.Now().Add(3 * time.Second) }

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "checkpoints"), false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func write(t testing.TB, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func scan(t testing.TB, sc *Scanner, roots []string, extras ...string) Result {
	t.Helper()
	r, err := sc.Scan(context.Background(), roots, extras)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// state is everything a restore must bring back: each path's kind, mode
// and content (a link's target), as read from disk.
func state(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %v", fi.Mode().Perm())
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("file %v %q", fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), data)
		default:
			out[rel] = "special"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fixture(t testing.TB) string {
	root := filepath.Join(t.TempDir(), "work")
	write(t, filepath.Join(root, "main.go"), "package main\n", 0o644)
	write(t, filepath.Join(root, "run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	write(t, filepath.Join(root, "pkg", "a.go"), "package pkg\n// a\n", 0o644)
	write(t, filepath.Join(root, "pkg", "deep", "b.txt"), "bee\n", 0o600)
	write(t, filepath.Join(root, "doomed.txt"), "delete me\n", 0o644)
	write(t, filepath.Join(root, "sedded.txt"), "hello world\n", 0o640)
	write(t, filepath.Join(root, ".gitignore"), "*.log\nsecret/\n", 0o644)
	write(t, filepath.Join(root, "app.log"), "log line\n", 0o644)
	write(t, filepath.Join(root, "secret", "key"), "k\n", 0o600)
	write(t, filepath.Join(root, "node_modules", "x", "index.js"), "module.exports = 1\n", 0o644)
	write(t, filepath.Join(root, "big.bin"), strings.Repeat("B", 2048), 0o644)
	if err := os.Symlink("main.go", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestScanRecordsWhatItShould(t *testing.T) {
	root := fixture(t)
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	r := scan(t, sc, []string{root})
	for path, want := range map[string]Kind{
		"main.go": File, "run.sh": File, "pkg": Dir, "pkg/deep/b.txt": File, "app.log": Ignored, "secret": IgnoredDir,
		"node_modules": IgnoredDir, "big.bin": Oversize, "link": Link, "pipe": Special, ".gitignore": File,
	} {
		e, ok, err := st.Lookup(r.ID, filepath.Join(root, path))
		if err != nil || !ok {
			t.Fatalf("%s: ok %v, err %v", path, ok, err)
		}
		if e.Kind != want {
			t.Errorf("%s recorded as %v, want %v", path, e.Kind, want)
		}
	}
	if e, ok, _ := st.Lookup(r.ID, filepath.Join(root, "secret", "key")); ok {
		t.Errorf("a file inside an ignored directory is recorded: %+v", e)
	}
	if e, _, _ := st.Lookup(r.ID, filepath.Join(root, "run.sh")); e.Mode != 0o755 {
		t.Errorf("run.sh mode %v", e.Mode)
	}
	if got := r.Stats; got.Files != 8 || got.Ignored != 3 || got.Oversize != 1 || got.Special != 1 {
		t.Errorf("stats %+v", got)
	}
}

// TestScanIsIncremental: a second scan reads only what changed, shares
// every unchanged object, and a scan of an unchanged tree stores nothing.
func TestScanIsIncremental(t *testing.T) {
	root := fixture(t)
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	first := scan(t, sc, []string{root})
	again := scan(t, sc, []string{root})
	if again.ID != first.ID || again.Stats.Hashed != 0 || again.Stats.Stored != 0 {
		t.Fatalf("unchanged tree: %s vs %s, stats %+v", again.ID.Short(), first.ID.Short(), again.Stats)
	}
	write(t, filepath.Join(root, "pkg", "a.go"), "package pkg\n// changed\n", 0o644)
	second := scan(t, sc, []string{root})
	if second.Stats.Hashed != 1 {
		t.Errorf("hashed %d files after one changed", second.Stats.Hashed)
	}
	// One blob, the pkg tree, the root tree and the checkpoint.
	if second.Stats.Stored != 4 {
		t.Errorf("stored %d objects after one file changed", second.Stats.Stored)
	}
}

// TestScanSeesEveryKindOfChange: same size and restored mtime, a new
// inode (sed -i), a mode change, and an ignored file, each detected.
func TestScanSeesEveryKindOfChange(t *testing.T) {
	root := fixture(t)
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	first := scan(t, sc, []string{root})

	p := filepath.Join(root, "main.go")
	fi, _ := os.Stat(p)
	write(t, p, "package mian\n", 0o644) // same size
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	sed := filepath.Join(root, "sedded.txt")
	write(t, sed+".tmp", "hello there\n", 0o640)
	if err := os.Rename(sed+".tmp", sed); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "run.sh"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "app.log"), "log line\nmore\n", 0o644)
	second := scan(t, sc, []string{root})
	changes, err := st.Diff(first.ID, second.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range changes {
		rel, _ := filepath.Rel(root, c.Path)
		got[rel] = c.Op()
	}
	want := map[string]string{"main.go": "modified", "sedded.txt": "modified", "run.sh": "mode", "app.log": "modified"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
}

// TestRestoreBringsBackTheCheckpoint: edit, create, replace, delete,
// chmod, a new directory, a type change and a retargeted link, then a
// restore of the first checkpoint gives the first state exactly; what it
// cannot restore (ignored, oversize) is skipped with its reason.
func TestRestoreBringsBackTheCheckpoint(t *testing.T) {
	root := fixture(t)
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	before := state(t, root)
	first := scan(t, sc, []string{root})

	write(t, filepath.Join(root, "main.go"), "package main\n\nfunc main() {}\n", 0o644)
	write(t, filepath.Join(root, "new.go"), "package main // new\n", 0o644)
	write(t, filepath.Join(root, "sedded.txt.x"), "hello there\n", 0o640)
	os.Rename(filepath.Join(root, "sedded.txt.x"), filepath.Join(root, "sedded.txt"))
	os.Remove(filepath.Join(root, "doomed.txt"))
	os.Chmod(filepath.Join(root, "run.sh"), 0o600)
	write(t, filepath.Join(root, "gen", "sub", "out.go"), "package gen\n", 0o644)
	os.RemoveAll(filepath.Join(root, "pkg", "deep"))
	write(t, filepath.Join(root, "pkg", "deep"), "now a file\n", 0o644)
	os.Remove(filepath.Join(root, "link"))
	os.Symlink("run.sh", filepath.Join(root, "link"))
	write(t, filepath.Join(root, "app.log"), "changed log\n", 0o644)
	write(t, filepath.Join(root, "big.bin"), strings.Repeat("C", 4096), 0o644)
	write(t, filepath.Join(root, "node_modules", "y.js"), "new dep\n", 0o644)

	current := scan(t, sc, []string{root})
	plan, err := st.Plan(current.ID, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := st.Apply(context.Background(), plan, ApplyOptions{Token: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied.Failed) > 0 || len(applied.Left) > 0 {
		t.Fatalf("failed %v, left %v", applied.Failed, applied.Left)
	}
	after := state(t, root)
	// What a checkpoint does not restore: the ignored log, the oversize
	// file, the new file in node_modules.
	for _, p := range []string{"app.log", "big.bin", "node_modules/y.js"} {
		delete(before, p)
		delete(after, p)
	}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s: want %s, got %s", k, v, after[k])
			}
		}
		for k, v := range after {
			if _, ok := before[k]; !ok {
				t.Errorf("%s left behind: %s", k, v)
			}
		}
	}
	var skipped []string
	for _, s := range plan.Skipped {
		rel, _ := filepath.Rel(root, s.Path)
		skipped = append(skipped, rel+": "+s.Why)
	}
	slices.Sort(skipped)
	if want := []string{"app.log: ignored", "big.bin: over the size cap"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
	// Restoring again does nothing: the state is the checkpoint's.
	now := scan(t, sc, []string{root})
	again, _ := st.Plan(now.ID, first.ID)
	if len(again.Actions) != 0 {
		t.Errorf("a second restore would still do %v", again.Actions)
	}
}

// TestApplyLeavesChangedFiles: a file changed after the plan was made,
// and a path the caller leaves, are not touched.
func TestApplyLeavesChangedFiles(t *testing.T) {
	root := fixture(t)
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	first := scan(t, sc, []string{root})
	write(t, filepath.Join(root, "main.go"), "agent\n", 0o644)
	write(t, filepath.Join(root, "pkg", "a.go"), "agent\n", 0o644)
	write(t, filepath.Join(root, "run.sh"), "agent\n", 0o755)
	cur := scan(t, sc, []string{root})
	plan, err := st.Plan(cur.ID, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "main.go"), "user\n", 0o644)
	applied, err := st.Apply(context.Background(), plan, ApplyOptions{Leave: func(p string) bool { return strings.HasSuffix(p, "run.sh") }})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "main.go")); string(got) != "user\n" {
		t.Errorf("main.go = %q: a file changed after the plan was overwritten", got)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "run.sh")); string(got) != "agent\n" {
		t.Errorf("run.sh = %q: a left path was restored", got)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "pkg", "a.go")); string(got) != "package pkg\n// a\n" {
		t.Errorf("pkg/a.go = %q", got)
	}
	if len(applied.Left) != 2 || len(applied.Done) != 1 {
		t.Errorf("done %d, left %d", len(applied.Done), len(applied.Left))
	}
}

// TestApplyStaysInsideTheRoot: a directory swapped for a link to outside
// the workspace after the plan is not written through.
func TestApplyStaysInsideTheRoot(t *testing.T) {
	root := fixture(t)
	outside := t.TempDir()
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	first := scan(t, sc, []string{root})
	os.Remove(filepath.Join(root, "pkg", "deep", "b.txt"))
	cur := scan(t, sc, []string{root})
	plan, _ := st.Plan(cur.ID, first.ID)
	os.RemoveAll(filepath.Join(root, "pkg", "deep"))
	os.Symlink(outside, filepath.Join(root, "pkg", "deep"))
	applied, err := st.Apply(context.Background(), plan, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("a restore wrote outside the root: %v", ents)
	}
	if len(applied.Done) != 0 {
		t.Fatalf("done %v", applied.Done)
	}
}

// TestExtras: a file outside the roots is recorded by path, absent ones
// too, and restored or removed.
func TestExtras(t *testing.T) {
	root := fixture(t)
	out := t.TempDir()
	exists, missing := filepath.Join(out, "notes.txt"), filepath.Join(out, "later.txt")
	write(t, exists, "original\n", 0o644)
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	if sc.Covers([]string{root}, exists) || !sc.Covers([]string{root}, filepath.Join(root, "main.go")) ||
		sc.Covers([]string{root}, filepath.Join(root, "x.log")) || sc.Covers([]string{root}, filepath.Join(root, "node_modules", "a.js")) ||
		!sc.Covers([]string{root}, filepath.Join(root, "brand", "new.go")) || sc.Covers([]string{root}, filepath.Join(root, "secret", "k2")) {
		t.Fatal("Covers is wrong")
	}
	first := scan(t, sc, []string{root}, exists, missing)
	write(t, exists, "changed\n", 0o644)
	write(t, missing, "created\n", 0o644)
	cur := scan(t, sc, []string{root}, exists, missing)
	plan, err := st.Plan(cur.ID, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(context.Background(), plan, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(exists); string(got) != "original\n" {
		t.Errorf("notes.txt = %q", got)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("later.txt survived the restore: %v", err)
	}
}

// TestIndexSurvivesTheProcess: a new scanner reading a saved index stats
// the files instead of reading them.
func TestIndexSurvivesTheProcess(t *testing.T) {
	root := fixture(t)
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	first := scan(t, sc, []string{root})
	if err := sc.Save(); err != nil {
		t.Fatal(err)
	}
	st2, _ := Open(st.Dir(), false)
	sc2 := NewScanner(st2, Options{MaxFileBytes: 1024, Clock: later})
	r := scan(t, sc2, []string{root})
	if r.ID != first.ID || r.Stats.Hashed != 0 {
		t.Fatalf("after reload: %s vs %s, hashed %d", r.ID.Short(), first.ID.Short(), r.Stats.Hashed)
	}
	// A damaged index is only a cache: ignored.
	os.WriteFile(st.indexPath(root), []byte("garbage"), 0o600)
	sc3 := NewScanner(st2, Options{MaxFileBytes: 1024, Clock: later})
	if r := scan(t, sc3, []string{root}); r.ID != first.ID || r.Stats.Hashed != r.Stats.Files {
		t.Fatalf("damaged index: %+v", r.Stats)
	}
}

// TestRacyFilesAreReadAgain: a file modified right before a scan is not
// trusted by its stat next time, so a change within the same timestamp
// tick is still seen.
func TestRacyFilesAreReadAgain(t *testing.T) {
	root := fixture(t)
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024}) // the real clock: everything is racy
	scan(t, sc, []string{root})
	r := scan(t, sc, []string{root})
	if r.Stats.Hashed != r.Stats.Files {
		t.Fatalf("racy files trusted: hashed %d of %d", r.Stats.Hashed, r.Stats.Files)
	}
}

// TestPrune: the objects of a removed session go, shared ones stay.
func TestPrune(t *testing.T) {
	root := fixture(t)
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	a := scan(t, sc, []string{root})
	write(t, filepath.Join(root, "only-b.txt"), "b's own\n", 0o644)
	b := scan(t, sc, []string{root})
	st.Reference("keep", a.ID)
	st.Reference("gone", b.ID)
	if p, err := st.Prune(func(id string) bool { return id == "keep" }, time.Now()); err != nil || p.Objects != 0 || p.Sessions != 1 {
		t.Fatalf("young objects pruned: %+v, %v", p, err)
	}
	p, err := st.Prune(func(id string) bool { return id == "keep" }, time.Now().Add(2*pruneGrace))
	if err != nil {
		t.Fatal(err)
	}
	// b's checkpoint, its root tree and the new blob.
	if p.Objects != 3 {
		t.Fatalf("pruned %+v", p)
	}
	if _, err := st.Checkpoint(b.ID); err == nil {
		t.Fatal("the removed session's checkpoint survived")
	}
	plan, err := st.Plan(a.ID, a.ID)
	if err != nil || len(plan.Actions) != 0 {
		t.Fatalf("the kept checkpoint is damaged: %v", err)
	}
	if _, err := st.Diff(a.ID, a.ID); err != nil {
		t.Fatal(err)
	}
}

// TestReferenceAgainWritesOnlyWhatIsMissing: a step that changed nothing
// references the same checkpoint again and writes nothing, but a reference
// file another process pruned (or rewrote) gets the reference back — the
// checkpoint's objects must stay reachable while the session exists.
func TestReferenceAgainWritesOnlyWhatIsMissing(t *testing.T) {
	root := fixture(t)
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	a := scan(t, sc, []string{root})
	write(t, filepath.Join(root, "new.txt"), "new\n", 0o644)
	b := scan(t, sc, []string{root})
	refs := func() []Hash {
		t.Helper()
		hs, err := st.References("s")
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}
	for _, h := range []Hash{a.ID, a.ID, a.ID, b.ID, b.ID, a.ID} {
		if err := st.Reference("s", h); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := refs(), []Hash{a.ID, b.ID, a.ID}; !slices.Equal(got, want) {
		t.Fatalf("references %v, want %v (one per change)", got, want)
	}
	path := filepath.Join(st.Dir(), "sessions", "s")
	if err := os.Remove(path); err != nil { // pruned by another process
		t.Fatal(err)
	}
	if err := st.Reference("s", a.ID); err != nil {
		t.Fatal(err)
	}
	if got := refs(); !slices.Equal(got, []Hash{a.ID}) {
		t.Fatalf("after the file was removed: references %v, want [%v]", got, a.ID)
	}
	write(t, path, b.ID.String()+"\n"+b.ID.String()+"\n", 0o600) // rewritten elsewhere
	if err := st.Reference("s", a.ID); err != nil {
		t.Fatal(err)
	}
	if got := refs(); !slices.Equal(got, []Hash{b.ID, b.ID, a.ID}) {
		t.Fatalf("after the file was rewritten: references %v", got)
	}
}

func TestTreeEncodingRoundTrips(t *testing.T) {
	ents := []Entry{
		{Name: "a b\nc", Kind: File, Mode: 0o755 | fs.ModeSetuid, Hash: hashOf("blob", []byte("x")), Size: 1},
		{Name: "big", Kind: Oversize, Mode: 0o644, Size: 1 << 40, MTime: 1234567890123456789},
		{Name: "d", Kind: Dir, Mode: 0o700, Hash: hashOf("tree", nil)},
		{Name: "ign", Kind: IgnoredDir},
	}
	got, err := decodeTree(encodeTree(ents), false)
	if err != nil || !slices.Equal(got, ents) {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	for _, bad := range []string{"f644 - 0 0\tx\x00", "q644 - 0 0\tx\x00", "f644 zz 0 0\tx\x00", "d755 - 0 0\t..\x00", "i0 - 0 0\ta/b\x00", "-0 - 0 0\tx\x00"} {
		if _, err := decodeTree([]byte(bad), false); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if !bytes.Equal(encodeTree(nil), nil) {
		t.Error("empty tree")
	}
}
