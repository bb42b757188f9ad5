package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/fs/policy"
	"github.com/dshq/dsh/kernel"
)

var (
	target = fs.Target{Key: "/real/a.txt", Path: "/shown/a.txt"}
	v1     = fs.Version{Size: 1, ModTime: 10, Inode: 7}
	v2     = fs.Version{Size: 2, ModTime: 20, Inode: 7}
)

func code(err error) string { return fs.CodeOf(err) }

func TestCheckWrite(t *testing.T) {
	tr := policy.New()
	if err := tr.CheckWrite("a", target, nil); err != nil {
		t.Fatalf("creating needs no read: %v", err)
	}
	err := tr.CheckWrite("a", target, &v1)
	if code(err) != fs.CodeNotObserved || !strings.Contains(err.Error(), `"/shown/a.txt"`) || !strings.Contains(err.Error(), "read it first") {
		t.Fatalf("unread file: %v", err)
	}
	tr.Observed("a", target, v1)
	if err := tr.CheckWrite("a", target, &v1); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	err = tr.CheckWrite("a", target, &v2)
	if code(err) != fs.CodeStale || !strings.Contains(err.Error(), `"/shown/a.txt"`) || !strings.Contains(err.Error(), "read it again") {
		t.Fatalf("stale: %v", err)
	}
	if err := tr.CheckWrite("a", target, nil); err != nil {
		t.Fatalf("a deleted file may be recreated: %v", err)
	}
	// Owners are separate.
	if code(tr.CheckWrite("b", target, &v1)) != fs.CodeNotObserved {
		t.Fatal("owner b authorized by owner a's read")
	}
	tr.Observed("b", target, v2)
	if tr.CheckWrite("a", target, &v2) == nil || tr.CheckWrite("b", target, &v2) != nil {
		t.Fatal("owners' versions are not kept apart")
	}
	// The same file under another spelling shares the record (same Key).
	alias := fs.Target{Key: target.Key, Path: "/link/a.txt"}
	if err := tr.CheckWrite("b", alias, &v2); err != nil {
		t.Fatalf("alias: %v", err)
	}
}

func TestNoOwner(t *testing.T) {
	tr := policy.New()
	tr.Observed("", target, v1)
	if tr.Owners() != 0 {
		t.Fatal("the empty owner recorded something")
	}
	if err := tr.CheckWrite("", target, nil); err != nil {
		t.Fatalf("no owner may create: %v", err)
	}
	if code(tr.CheckWrite("", target, &v1)) != fs.CodeNotObserved {
		t.Fatal("no owner changed an existing file")
	}
}

// TestGuardSnapshotsRecord: the guard compares against the record as it was
// when the guard was made, so a change racing with the owner's own earlier
// change cannot slip through on the updated record.
func TestGuardSnapshotsRecord(t *testing.T) {
	tr := policy.New()
	tr.Observed("a", target, v1)
	g := tr.Guard("a", target)
	tr.Observed("a", target, v2) // another call of the same owner wrote v2
	if code(g(&v2)) != fs.CodeStale {
		t.Fatal("guard used the live record")
	}
	if err := g(&v1); err != nil {
		t.Fatalf("guard: %v", err)
	}
}

func TestForget(t *testing.T) {
	tr := policy.New()
	tr.Observed("a", target, v1)
	tr.Observed("b", target, v1)
	tr.Forget("a")
	if _, ok := tr.Seen("a", target); ok {
		t.Fatal("a still has records")
	}
	if _, ok := tr.Seen("b", target); !ok {
		t.Fatal("forgetting a dropped b")
	}

	s := kernel.NewScope("agent")
	tr.ForgetOnClose("b", s)
	tr.ForgetOnClose("b", s) // once is enough
	must(t, s.Close())
	if tr.Owners() != 0 {
		t.Fatal("closing the scope did not forget b")
	}
	// A closed scope forgets at once; a later observation starts afresh.
	tr.ForgetOnClose("b", s)
	tr.Observed("b", target, v1)
	if _, ok := tr.Seen("b", target); !ok {
		t.Fatal("observation after re-binding lost")
	}
}

func TestTrackerConcurrentUse(t *testing.T) {
	tr := policy.New()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			owner := string(rune('a' + i))
			for j := range 200 {
				v := fs.Version{Size: int64(j + 1)}
				tr.Observed(owner, target, v)
				if err := tr.CheckWrite(owner, target, &v); err != nil {
					t.Error(err)
					return
				}
			}
			tr.Forget(owner)
		})
	}
	wg.Wait()
	if tr.Owners() != 0 {
		t.Fatalf("%d owners left", tr.Owners())
	}
}

// TestWithLocalProvider wires the tracker to the real provider: the policy's
// rules hold end to end on real files.
func TestWithLocalProvider(t *testing.T) {
	dir := t.TempDir()
	p, err := local.New(local.Options{Cwd: dir})
	must(t, err)
	ctx := context.Background()
	name := filepath.Join(dir, "a.txt")
	must(t, os.WriteFile(name, []byte("hello world"), 0o644))
	tg, err := p.Resolve(ctx, dir, "a.txt")
	must(t, err)
	tr := policy.New()
	edit := fs.Edit{Old: "world", New: "there"}

	_, err = p.Edit(ctx, tg, edit, tr.Guard("agent", tg))
	if code(err) != fs.CodeNotObserved {
		t.Fatalf("edit before read: %v", err)
	}
	w, err := p.ReadLines(ctx, tg, fs.ReadRequest{Limit: 1})
	must(t, err)
	tr.Observed("agent", tg, w.Version)
	must(t, os.WriteFile(name, []byte("goodbye"), 0o644)) // changed behind the agent's back
	_, err = p.Edit(ctx, tg, edit, tr.Guard("agent", tg))
	if code(err) != fs.CodeStale {
		t.Fatalf("stale edit: %v", err)
	}
	must(t, os.WriteFile(name, []byte("hello world"), 0o644))
	w, err = p.ReadLines(ctx, tg, fs.ReadRequest{})
	must(t, err)
	tr.Observed("agent", tg, w.Version)
	res, err := p.Edit(ctx, tg, edit, tr.Guard("agent", tg))
	must(t, err)
	tr.Observed("agent", tg, res.Version)
	// Edit → edit needs no re-read.
	if _, err := p.Edit(ctx, tg, fs.Edit{Old: "there", New: "again"}, tr.Guard("agent", tg)); err != nil {
		t.Fatalf("chained edit: %v", err)
	}
	b, _ := os.ReadFile(name)
	if string(b) != "hello again" {
		t.Fatalf("content = %q", b)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
