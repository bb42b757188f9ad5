package backends

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/store/jsonl"
	"github.com/dshq/dsh/store/sqlite"
)

func TestOpenByName(t *testing.T) {
	for _, c := range []struct {
		name, want, path string
	}{
		{"", jsonl.Name, "sessions"},
		{JSONL, jsonl.Name, "sessions"},
		{SQLite, sqlite.Name, "sessions.db"},
	} {
		home := t.TempDir()
		b, err := Open(home, c.name, true)
		if err != nil {
			t.Fatalf("%q: %v", c.name, err)
		}
		if b.Name() != c.want {
			t.Errorf("%q opened %s, want %s", c.name, b.Name(), c.want)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if got := Path(home, c.name); got != filepath.Join(home, c.path) {
			t.Errorf("Path(%q) = %s", c.name, got)
		}
		var at string
		switch x := b.(type) {
		case *jsonl.Backend:
			at = x.Root()
		case *sqlite.Backend:
			at = x.Path()
		}
		if at != filepath.Join(home, c.path) {
			t.Errorf("%q stores at %s, want %s", c.name, at, filepath.Join(home, c.path))
		}
	}
	if _, err := Open(t.TempDir(), "postgres", true); err == nil || !strings.Contains(err.Error(), `unknown session store "postgres"`) {
		t.Errorf("unknown store: %v", err)
	}
}
