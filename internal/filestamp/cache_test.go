package filestamp

import (
	"os"
	"path/filepath"
	"testing"
)

// Get loads once, then again only when a stamped file changes or the
// trust decision does.
func TestCacheReloadsOnChangeOrTrust(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	var c Cache[string]
	loads := 0
	get := func(trusted bool) string {
		return c.Get("dir", trusted, func() (string, Set) {
			loads++
			b, _ := os.ReadFile(p)
			return string(b), Set{Of(p)}
		})
	}
	if v := get(false); v != "a" || loads != 1 {
		t.Fatalf("first: %q after %d loads", v, loads)
	}
	if v := get(false); v != "a" || loads != 1 {
		t.Fatalf("unchanged: %q after %d loads", v, loads)
	}
	if err := os.WriteFile(p, []byte("bb"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := get(false); v != "bb" || loads != 2 {
		t.Fatalf("changed file: %q after %d loads", v, loads)
	}
	if v := get(true); v != "bb" || loads != 3 {
		t.Fatalf("trust changed: %q after %d loads", v, loads)
	}
}
