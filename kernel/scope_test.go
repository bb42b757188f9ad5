package kernel_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/kernel"
)

// disposer returns a disposer that records name and fails with err.
func disposer(tr *trace, name string, err error) func() error {
	return func() error {
		tr.add(name)
		return err
	}
}

func mustDefer(t *testing.T, s *kernel.Scope, d func() error) {
	t.Helper()
	if err := s.Defer(d); err != nil {
		t.Fatal(err)
	}
}

func TestScopeClosesInReverseOrder(t *testing.T) {
	s := kernel.NewScope("plugin")
	tr := &trace{}
	mustDefer(t, s, disposer(tr, "1", nil))
	mustDefer(t, s, disposer(tr, "2", nil))
	if err := s.Add(func() { tr.add("3") }); err != nil {
		t.Fatal(err)
	}
	if s.Closed() {
		t.Fatal("Closed before Close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, tr, "3", "2", "1")
	if !s.Closed() || s.Name() != "plugin" {
		t.Fatalf("closed %v name %q", s.Closed(), s.Name())
	}
}

func TestScopeCloseIdempotent(t *testing.T) {
	s := kernel.NewScope("s")
	tr := &trace{}
	mustDefer(t, s, disposer(tr, "once", errors.New("fails")))
	if err := s.Close(); err == nil {
		t.Fatal("first Close should report the disposer's error")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	wantTrace(t, tr, "once")
}

func TestScopeCloseConcurrentRunsDisposersOnce(t *testing.T) {
	s := kernel.NewScope("s")
	tr := &trace{}
	for _, n := range []string{"a", "b", "c"} {
		mustDefer(t, s, disposer(tr, n, nil))
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _ = s.Close() })
	}
	wg.Wait()
	wantTrace(t, tr, "c", "b", "a")
}

func TestScopeErrorsJoinedAndLaterDisposersStillRun(t *testing.T) {
	s := kernel.NewScope("plugin")
	tr := &trace{}
	e1, e2 := errors.New("one"), errors.New("two")
	mustDefer(t, s, disposer(tr, "1", e1))
	mustDefer(t, s, func() error { tr.add("panics"); panic("dispose bomb") })
	mustDefer(t, s, disposer(tr, "3", e2))
	err := s.Close()
	wantTrace(t, tr, "3", "panics", "1")
	var pe *kernel.PanicError
	if !errors.Is(err, e1) || !errors.Is(err, e2) || !errors.As(err, &pe) || pe.Point != "dispose" {
		t.Fatalf("err %v", err)
	}
	if !strings.HasPrefix(err.Error(), `kernel: closing scope "plugin": `) {
		t.Fatalf("text %q", err.Error())
	}
}

func TestScopeDeferAfterCloseRunsAtOnce(t *testing.T) {
	s := kernel.NewScope("s")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tr := &trace{}
	if err := s.Defer(disposer(tr, "late", nil)); !errors.Is(err, kernel.ErrScopeClosed) {
		t.Fatalf("err %v", err)
	}
	wantTrace(t, tr, "late")
	if err := s.Add(func() { tr.add("late add") }); !errors.Is(err, kernel.ErrScopeClosed) {
		t.Fatalf("err %v", err)
	}
	wantTrace(t, tr, "late", "late add")
	// A late registration on a point is undone at once, so it never leaks.
	g := kernel.NewSignal[int]("g")
	_ = s.Add(g.Listen(func(context.Context, int) error { return nil }))
	if g.Len() != 0 {
		t.Fatalf("late listener leaked: %d", g.Len())
	}
}

func TestScopeChildClosesAtItsPosition(t *testing.T) {
	root := kernel.NewScope("root")
	tr := &trace{}
	mustDefer(t, root, disposer(tr, "root-1", nil))
	child := root.Child("child")
	if child.Name() != "child" {
		t.Fatalf("name %q", child.Name())
	}
	mustDefer(t, child, disposer(tr, "child-1", nil))
	mustDefer(t, child, disposer(tr, "child-2", nil))
	grandchild := child.Child("grandchild")
	mustDefer(t, grandchild, disposer(tr, "grandchild-1", nil))
	mustDefer(t, root, disposer(tr, "root-2", nil))
	if err := root.Close(); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, tr, "root-2", "grandchild-1", "child-2", "child-1", "root-1")
	if !child.Closed() || !grandchild.Closed() {
		t.Fatal("children not closed with their parent")
	}
}

func TestScopeChildClosedEarlyIsNotClosedAgain(t *testing.T) {
	root := kernel.NewScope("root")
	tr := &trace{}
	child := root.Child("child")
	mustDefer(t, child, disposer(tr, "child", nil))
	mustDefer(t, root, disposer(tr, "root", nil))
	if err := child.Close(); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, tr, "child")
	if root.Closed() {
		t.Fatal("closing a child closed its parent")
	}
	if err := root.Close(); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, tr, "child", "root")
}

func TestScopeChildErrorReachesParent(t *testing.T) {
	root := kernel.NewScope("root")
	child := root.Child("child")
	boom := errors.New("boom")
	mustDefer(t, child, func() error { return boom })
	err := root.Close()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `closing scope "child"`) {
		t.Fatalf("err %v", err)
	}
}

func TestScopeChildOfClosedScopeIsClosed(t *testing.T) {
	root := kernel.NewScope("root")
	_ = root.Close()
	child := root.Child("late")
	if !child.Closed() {
		t.Fatal("a child of a closed scope must start closed")
	}
	tr := &trace{}
	if err := child.Defer(disposer(tr, "x", nil)); !errors.Is(err, kernel.ErrScopeClosed) {
		t.Fatalf("err %v", err)
	}
	wantTrace(t, tr, "x")
}

func TestEffectKeepsDisposersOnSuccess(t *testing.T) {
	s := kernel.NewScope("s")
	tr := &trace{}
	mustDefer(t, s, disposer(tr, "before", nil))
	err := s.Effect(func(record func(func() error)) error {
		record(disposer(tr, "e1", nil))
		record(disposer(tr, "e2", nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustDefer(t, s, disposer(tr, "after", nil))
	wantTrace(t, tr) // nothing ran yet
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, tr, "after", "e2", "e1", "before")
}

func TestEffectRollsBackOnError(t *testing.T) {
	s := kernel.NewScope("s")
	tr := &trace{}
	boom := errors.New("notification failed")
	err := s.Effect(func(record func(func() error)) error {
		record(disposer(tr, "undo-1", nil))
		record(disposer(tr, "undo-2", errors.New("rollback errors are dropped")))
		record(disposer(tr, "undo-3", nil))
		return boom
	})
	if err != boom {
		t.Fatalf("err %v, want the effect's own error", err)
	}
	wantTrace(t, tr, "undo-3", "undo-2", "undo-1")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, tr, "undo-3", "undo-2", "undo-1") // not run a second time
}

func TestEffectRollsBackOnPanic(t *testing.T) {
	s := kernel.NewScope("s")
	tr := &trace{}
	err := s.Effect(func(record func(func() error)) error {
		record(disposer(tr, "undo-1", nil))
		record(func() error { tr.add("undo-2"); panic("rollback panics are contained") })
		panic("effect bomb")
	})
	var pe *kernel.PanicError
	if !errors.As(err, &pe) || pe.Point != "effect" || pe.Value != "effect bomb" {
		t.Fatalf("err %v", err)
	}
	wantTrace(t, tr, "undo-2", "undo-1")
}

func TestEffectOnClosedScopeUndoesInReverse(t *testing.T) {
	s := kernel.NewScope("s")
	_ = s.Close()
	tr := &trace{}
	err := s.Effect(func(record func(func() error)) error {
		record(disposer(tr, "undo-1", nil))
		record(disposer(tr, "undo-2", nil))
		return nil
	})
	if !errors.Is(err, kernel.ErrScopeClosed) {
		t.Fatalf("err %v", err)
	}
	// One effect's disposers are one LIFO chain, even when the scope is
	// already gone and they run at once.
	wantTrace(t, tr, "undo-2", "undo-1")
}
