package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// A row in the middle that no longer parses: salvage keeps every other
// event and names the damaged seq.
func TestSalvageSkipsADamagedRow(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	id := session.ID("s1")
	b, h, _ := notes(t, dbPath(dir), id, 10, func(i int) string { return fmt.Sprintf(`{"n":%d}`, i) })
	raw(t, dir, func(db *sql.DB) {
		exec(t, db, `UPDATE events SET event = 'garbage' WHERE session_id = ? AND seq IN (4, 5)`, string(id))
		exec(t, db, `DELETE FROM events WHERE session_id = ? AND seq = 7`, string(id))
	})
	sv, err := b.Salvage(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range sv.Events {
		seqs = append(seqs, e.Seq)
	}
	if fmt.Sprint(seqs) != "[0 1 2 3 6 8 9]" || sv.Header != h {
		t.Fatalf("seqs %v header %+v", seqs, sv.Header)
	}
	var damage []string
	for _, d := range sv.Damage {
		damage = append(damage, strings.TrimPrefix(d.String(), dbPath(dir)+": "))
	}
	if got := strings.Join(damage, "|"); got != "seq 4-5: rows that are not JSON events|seq 7: events missing" {
		t.Fatalf("damage %q", got)
	}
	if _, err := b.Salvage(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("salvage of a missing session: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// notes opens a database at p and stores session id with n "note" events
// whose data is data(i).
func notes(t *testing.T, p string, id session.ID, n int, data func(int) string) (*Backend, session.Header, []session.Event) {
	t.Helper()
	b, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h := session.Header{Version: session.FormatVersion, ID: id, CreatedAt: 1}
	if err := b.Lock(ctx, id); err != nil {
		t.Fatal(err)
	}
	var events []session.Event
	for i := range n {
		events = append(events, session.Event{Seq: int64(i), Type: "note", Time: 1, Data: []byte(data(i))})
	}
	if err := b.AppendBatch(ctx, store.Batch{Header: h, Events: events, Info: store.NewInfo(h, events)}); err != nil {
		t.Fatal(err)
	}
	return b, h, events
}
