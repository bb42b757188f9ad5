package tokens

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestCheckConcurrentWithRevoke checks a token from several goroutines
// while another store of the same file (dsh serve token create/revoke in
// another process) creates and revokes others: the kept token always
// checks, a created token checks at once, and once Revoke returns the
// revoked token no longer does. Under -race it guards the cached file.
func TestCheckConcurrentWithRevoke(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve", "tokens.json")
	s := Open(path)
	keep, _, err := s.Create("keep", Full, nil, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	other := Open(path)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, ok := s.Check(keep); !ok {
					t.Error("the kept token was refused")
					return
				}
			}
		})
	}
	for i := range 20 {
		name := fmt.Sprintf("t%d", i)
		raw, _, err := other.Create(name, Read, nil, time.Unix(2, 0))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Check(raw); !ok {
			t.Errorf("token %s refused right after its creation", name)
		}
		if _, err := other.Revoke(name); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Check(raw); ok {
			t.Errorf("token %s still checks after its revocation", name)
		}
	}
	close(stop)
	wg.Wait()
}
