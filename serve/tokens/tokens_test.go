package tokens

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
