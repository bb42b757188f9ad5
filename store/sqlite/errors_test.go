package sqlite

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/dshq/dsh/session"
)

// A file that is not a database is refused with its path and what to do,
// not SQLite's bare "file is not a database (26)".
func TestNotADatabaseNamesThePath(t *testing.T) {
	dir := t.TempDir()
	p := dbPath(dir)
	if err := os.WriteFile(p, []byte(strings.Repeat("this is not a database\n", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p, Options{})
	if err == nil {
		t.Fatal("opened a file that is not a database")
	}
	for _, want := range []string{p + ": ", "file is not a database", "move it aside", "dsh sessions copy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// A database damaged after it was written: reading a session reports the
// file and that it is damaged.
func TestMalformedDatabaseNamesThePath(t *testing.T) {
	dir := t.TempDir()
	p := dbPath(dir)
	ctx := context.Background()
	id := session.ID("s1")
	b, _, events := notes(t, p, id, 2000, func(int) string { return `{"text":"` + strings.Repeat("x", 200) + `"}` })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Scribble over the pages after the first few (the schema stays
	// readable, the events' b-tree does not).
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte(strings.Repeat("\xde\xad\xbe\xef", 1024))
	for off := int64(8 * 4096); off < 64*4096; off += 4096 {
		if _, err := f.WriteAt(junk, off); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	b, err = Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.LoadStored(ctx, id)
	if err == nil || !strings.Contains(err.Error(), p+": ") || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("loading a damaged database: %v", err)
	}
	// Salvage reads around the damaged pages and says which seqs it lost.
	sv, err := b.Salvage(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(sv.Events) == 0 || len(sv.Events) >= len(events) || len(sv.Damage) == 0 {
		t.Fatalf("salvaged %d of %d events, damage %v", len(sv.Events), len(events), sv.Damage)
	}
	for _, e := range sv.Events {
		if e.Type != "note" {
			t.Fatalf("salvaged a bogus event %+v", e)
		}
	}
	t.Logf("salvaged %d of %d events; damage %v", len(sv.Events), len(events), sv.Damage)
}
