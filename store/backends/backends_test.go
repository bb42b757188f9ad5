package backends

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/internal/pgtest"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/store/jsonl"
	"github.com/dshq/dsh/store/postgres"
	"github.com/dshq/dsh/store/sqlite"
)

func TestOpenByName(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, want, path string
	}{
		{"", jsonl.Name, "sessions"},
		{JSONL, jsonl.Name, "sessions"},
		{SQLite, sqlite.Name, "sessions.db"},
	} {
		home := t.TempDir()
		b, err := Open(ctx, Config{Store: c.name}, Options{Home: home, NoSync: true})
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
	if _, err := Open(ctx, Config{Store: "mongo"}, Options{Home: t.TempDir()}); err == nil || !strings.Contains(err.Error(), `unknown session store "mongo"`) {
		t.Errorf("unknown store: %v", err)
	}
	noEnv := func(string) string { return "" }
	if _, err := Open(ctx, Config{Store: Postgres}, Options{Getenv: noEnv}); err == nil || !strings.Contains(err.Error(), "DSH_DATABASE_URL") {
		t.Errorf("postgres without a URL: %v", err)
	}
}

func TestOpenPostgres(t *testing.T) {
	url, schema := pgtest.Schema(t)
	ctx := context.Background()
	env := func(k string) string {
		if k == postgres.EnvURL {
			return url
		}
		return ""
	}
	// The store and its section come from the user's files only.
	dir := t.TempDir()
	user := filepath.Join(dir, "user.json")
	writeFile(t, user, `{"sessionStore":"postgres","postgres":{"schema":"`+schema+`","leaseTTL":"5s"}}`)
	proj := filepath.Join(dir, "proj")
	writeFile(t, filepath.Join(proj, ".dsh", "settings.json"), `{"sessionStore":"sqlite","postgres":{"schema":"elsewhere"}}`)
	sc, err := settings.Load(settings.Input{Paths: settings.Paths{Project: proj, SettingsFile: user}, Schema: settings.Schema{Key, postgres.Key},
		Trust: func(string) (bool, error) { return true, nil }})
	if err != nil {
		t.Fatal(err)
	}
	cfg := FromSettings(sc)
	if cfg.Store != Postgres || cfg.Postgres.Schema != schema || time.Duration(cfg.Postgres.LeaseTTL) != 5*time.Second || len(sc.Warnings()) != 2 {
		t.Fatalf("%+v %q", cfg, sc.Warnings())
	}
	o := Options{Getenv: env}
	msg, err := Migrate(ctx, cfg, o)
	if err != nil || !strings.Contains(msg, "migrated from version 0") || !strings.Contains(msg, "xxxxx") {
		t.Fatalf("migrate: %q %v", msg, err)
	}
	b, err := Open(ctx, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pb, ok := b.(*postgres.Backend)
	if !ok || pb.Schema() != schema {
		t.Fatalf("opened %T", b)
	}
	if w := Where(cfg, o); strings.Contains(w, pgPassword(url)) || !strings.Contains(w, "schema "+schema) {
		t.Fatalf("where: %s", w)
	}
	if msg, err := Migrate(ctx, cfg, o); err != nil || !strings.Contains(msg, "up to date") {
		t.Fatalf("migrate again: %q %v", msg, err)
	}
	// dsh doctor: the database answers, then it does not.
	if f := findings(ctx, cfg, Where(cfg, o), b); len(f) != 1 || f[0].Severity != doctor.OK || !strings.Contains(f[0].Message, fmt.Sprintf("schema version %d", postgres.SchemaVersion)) {
		t.Fatalf("doctor: %+v", f)
	}
	_ = b.Close()
	if f := findings(ctx, cfg, Where(cfg, o), b); len(f) != 1 || f[0].Severity != doctor.Error || strings.Contains(f[0].Message+f[0].Fix, pgPassword(url)) {
		t.Fatalf("doctor, closed: %+v", f)
	}
}

func pgPassword(url string) string {
	rest := url[strings.Index(url, "://")+3:]
	userinfo := rest[:strings.Index(rest, "@")]
	_, pw, _ := strings.Cut(userinfo, ":")
	return pw
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
