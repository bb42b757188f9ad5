package tokens

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/pgtest"
)

func TestCreateCheckRevoke(t *testing.T) {
	dir := t.TempDir()
	s := Open(filepath.Join(dir, "serve", "tokens.json"))
	raw, tok, err := s.Create("ci", Read, []string{"/src/a/../b"}, time.Unix(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(raw, "dsh_"+tok.ID+"_") || len(raw) != 4+8+1+64 {
		t.Fatalf("token %q", raw)
	}
	if tok.Workspaces[0] != "/src/b" || !tok.ReadOnly() {
		t.Fatalf("stored %+v", tok)
	}
	b, err := os.ReadFile(filepath.Join(dir, "serve", "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), raw[13:]) {
		t.Fatal("the file holds the secret")
	}
	if st, _ := os.Stat(filepath.Join(dir, "serve", "tokens.json")); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	if got, ok := s.Check(raw); !ok || got.Name != "ci" {
		t.Fatalf("check: %v %+v", ok, got)
	}
	for _, bad := range []string{"", raw + "0", raw[:len(raw)-1] + "x", "dsh_" + tok.ID, "Bearer " + raw, strings.Replace(raw, tok.ID, "00000000", 1)} {
		if _, ok := s.Check(bad); ok {
			t.Fatalf("accepted %q", bad)
		}
	}
	if _, _, err := s.Create("ci", Full, nil, time.Now()); err == nil {
		t.Fatal("a second token named ci")
	}
	// Another process (dsh serve token revoke) rewrites the file: the
	// running store sees it at the next check.
	other := Open(filepath.Join(dir, "serve", "tokens.json"))
	if _, err := other.Revoke("ci"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Check(raw); ok {
		t.Fatal("a revoked token still checks")
	}
	if _, err := other.Revoke("ci"); err == nil {
		t.Fatal("revoked twice")
	}
}

// TestKeepers: the file and the database keep tokens alike — a created
// token checks, a wrong secret or unknown id does not, names are unique,
// Current holds while the hash does, a revoked token is gone.
func TestKeepers(t *testing.T) {
	keepers := map[string]Keeper{"file": Open(filepath.Join(t.TempDir(), "tokens.json"))}
	if os.Getenv(pgtest.EnvURL) != "" { // else the file alone
		url, schema := pgtest.Schema(t)
		p, err := OpenPostgres(context.Background(), url, schema)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		keepers["postgres"] = p
	}
	for name, k := range keepers {
		t.Run(name, func(t *testing.T) {
			raw, tok, err := k.Create("ci", Full, []string{"/w/a"}, time.Unix(5, 0))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := k.Create("ci", Read, nil, time.Unix(6, 0)); err == nil || !strings.Contains(err.Error(), "exists already") {
				t.Fatalf("a second token named ci: %v", err)
			}
			got, ok := k.Check(raw)
			if !ok || got.Name != "ci" || got.Access != Full || len(got.Workspaces) != 1 || got.Workspaces[0] != "/w/a" || got.Created != 5000 {
				t.Fatalf("check: %v %+v", ok, got)
			}
			if _, ok := k.Check(raw[:len(raw)-1] + "x"); ok {
				t.Fatal("a wrong secret checked")
			}
			if _, ok := k.Current(tok.ID, tok.Hash); !ok {
				t.Fatal("Current refused the token's own hash")
			}
			if _, ok := k.Current(tok.ID, strings.Repeat("0", 64)); ok {
				t.Fatal("Current took another hash")
			}
			if l, err := k.List(); err != nil || len(l) != 1 {
				t.Fatalf("list: %v %v", l, err)
			}
			if _, err := k.Revoke("ci"); err != nil {
				t.Fatal(err)
			}
			if _, ok := k.Check(raw); ok {
				t.Fatal("a revoked token checked")
			}
			if _, err := k.Revoke("ci"); !errors.Is(err, ErrUnknown) {
				t.Fatalf("revoking again: %v", err)
			}
		})
	}
}
