package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentScansOfOneRoot: the sessions of one workspace share its
// scanner and scan at once while each changes its own files. Every scan's
// checkpoint records what its session wrote before it (a file's content,
// and an extra outside the root), and once all are done the shared
// scanner's stat cache gives the same checkpoint as a scanner starting
// from nothing. Under -race it guards the scanner's shared state.
func TestConcurrentScansOfOneRoot(t *testing.T) {
	root := fixture(t)
	outside := t.TempDir()
	st := newStore(t)
	sc := NewScanner(st, Options{MaxFileBytes: 1024, Clock: later})
	const workers, rounds = 6, 12
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			p := filepath.Join(root, fmt.Sprintf("w%d", i), "f.txt")
			x := filepath.Join(outside, fmt.Sprintf("x%d", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Error(err)
				return
			}
			for r := range rounds {
				// Each round's content has another size, so the stat cache
				// (which the later clock makes trust every stat) must see it.
				want := fmt.Sprintf("worker %d %s\n", i, strings.Repeat("r", r+1))
				if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
					t.Error(err)
					return
				}
				if err := os.WriteFile(x, []byte(want+"x"), 0o644); err != nil {
					t.Error(err)
					return
				}
				res, err := sc.Scan(context.Background(), []string{root}, []string{x})
				if err != nil {
					t.Error(err)
					return
				}
				for path, content := range map[string]string{p: want, x: want + "x"} {
					e, ok, err := st.Lookup(res.ID, path)
					if err != nil || !ok {
						t.Errorf("worker %d round %d: %s not in the checkpoint (%v)", i, r, path, err)
						return
					}
					data, err := st.Blob(e.Hash)
					if err != nil || string(data) != content {
						t.Errorf("worker %d round %d: %s recorded as %q (%v), want %q", i, r, path, data, err, content)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	shared := scan(t, sc, []string{root})
	fresh := scan(t, NewScanner(st, Options{MaxFileBytes: 1024, Clock: later}), []string{root})
	if shared.ID != fresh.ID {
		t.Fatalf("after concurrent scans the shared scanner records %s, a fresh one %s", shared.ID.Short(), fresh.ID.Short())
	}
}
