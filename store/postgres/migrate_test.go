package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/internal/pgtest"
)

func migrationRows(t *testing.T, url, schema string) []string {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, url)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT version || ': ' || description FROM %s.schema_migrations ORDER BY version", schema))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	url, schema := pgtest.Schema(t)
	// Several processes opening a fresh database at once apply each
	// migration once.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			b, err := Open(ctx, Options{URL: url, Schema: schema})
			if err == nil {
				err = b.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if rows := migrationRows(t, url, schema); len(rows) != len(migrations) {
		t.Fatalf("migrations recorded: %q", rows)
	}
	res, err := Migrate(ctx, Options{URL: url, Schema: schema})
	if err != nil || res.From != SchemaVersion || res.To != SchemaVersion || len(res.Applied) != 0 {
		t.Fatalf("migrate an up-to-date schema: %+v %v", res, err)
	}
	// A newer build adds a migration: it is applied once, on open.
	newer := append(append([]migration(nil), migrations...), migration{version: SchemaVersion + 1, description: "a test column", sql: "ALTER TABLE sessions ADD COLUMN extra text"})
	res, err = Migrate(ctx, Options{URL: url, Schema: schema, migrations: newer})
	if err != nil || res.From != SchemaVersion || res.To != SchemaVersion+1 || len(res.Applied) != 1 {
		t.Fatalf("migrate to the newer layout: %+v %v", res, err)
	}
	b, err := Open(ctx, Options{URL: url, Schema: schema, migrations: newer})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	// This build refuses the newer layout rather than writing it.
	_, err = Open(ctx, Options{URL: url, Schema: schema})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("is at version %d, newer than this build of dsh knows (%d)", SchemaVersion+1, SchemaVersion)) {
		t.Fatalf("open a newer schema: %v", err)
	}
	// A fresh schema through Migrate alone.
	fresh := pgtest.Name("m")
	t.Cleanup(func() { pgtest.DropSchema(t, url, fresh) })
	res, err = Migrate(ctx, Options{URL: url, Schema: fresh})
	if err != nil || res.From != 0 || res.To != SchemaVersion || len(res.Applied) != len(migrations) {
		t.Fatalf("migrate a fresh schema: %+v %v", res, err)
	}
	if _, err := Open(ctx, Options{URL: url, Schema: "Bad-Name"}); err == nil || !strings.Contains(err.Error(), "want lower-case") {
		t.Fatalf("bad schema name: %v", err)
	}
}

func TestTextEncoding(t *testing.T) {
	for _, s := range []string{"", "plain", "a\x00b", "100%", "%00", "%2", "a%", "%25\x00%"} {
		enc := encodeText(s)
		if strings.ContainsRune(enc, 0) || decodeText(enc) != s {
			t.Errorf("%q → %q → %q", s, enc, decodeText(enc))
		}
	}
	if encodeText("%00") == encodeText("\x00") {
		t.Error("not injective")
	}
}
