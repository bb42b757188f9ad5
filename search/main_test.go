package search

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The Go walker starts goroutines and the rg backend a process with pipe
// readers; none may outlive a call.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mkTree creates files under a fresh temporary directory and returns it.
// Keys are slash-separated paths; a key ending in "/" makes a directory; a
// value starting with "->" makes a symbolic link to the rest.
func mkTree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, files)
	return root
}

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(body, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// setMtime gives files distinct modification times, oldest first.
func setMtime(t testing.TB, root string, oldestFirst ...string) {
	t.Helper()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range oldestFirst {
		ts := base.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(name)), ts, ts); err != nil {
			t.Fatal(err)
		}
	}
}

// rgPath returns the rg executable, skipping the test when there is none.
func rgPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("rg")
	if err != nil {
		t.Skip("ripgrep (rg) is not installed")
	}
	return p
}

// engines returns the backends to run a behaviour test against. The rg half
// is skipped (not failed) where rg is missing.
func engines() []Backend { return []Backend{Native, Ripgrep} }

func forEachBackend(t *testing.T, fn func(t *testing.T, s *Searcher)) {
	for _, b := range engines() {
		t.Run(string(b), func(t *testing.T) {
			if b == Ripgrep {
				rgPath(t)
			}
			fn(t, &Searcher{Backend: b})
		})
	}
}
