//go:build unix

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// With a task turning a directory into a symbolic link to another one and
// back, as fast as it can, no write whose Key named the first directory
// lands in the other: it lands where the Key says, or is refused. (With
// writes that followed links, some landed on the other side.)
func TestWritesLandWhereTheKeySays(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	ok, real, denied := filepath.Join(dir, "ok"), filepath.Join(dir, "ok.real"), filepath.Join(dir, "denied")
	for _, d := range []string{ok, denied} {
		must(t, os.MkdirAll(d, 0o755))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if os.Rename(ok, real) == nil {
				_ = os.Symlink(denied, ok)
				_ = os.Remove(ok)
				_ = os.Rename(real, ok)
			}
		}
	}()
	landed, refused, skipped := 0, 0, 0
	for i := 0; i < 2000 && landed < 400; i++ {
		tg, err := p.Resolve(ctx, dir, "ok/f")
		if err != nil || filepath.Dir(tg.Key) != ok {
			skipped++ // resolved while ok was the link, or missing
			continue
		}
		content := fmt.Sprintf("write %d\n", i)
		if _, err := p.Write(ctx, tg, content, nil); err != nil {
			refused++
			continue
		}
		landed++
		if b, _ := os.ReadFile(filepath.Join(denied, "f")); string(b) == content {
			t.Fatalf("write %d: its key was %s, but it landed in %s", i, tg.Key, denied)
		}
	}
	stop.Store(true)
	wg.Wait()
	if landed == 0 {
		t.Fatalf("no write landed (%d refused, %d skipped): the test checked nothing", refused, skipped)
	}
	t.Logf("%d writes landed where their key said, %d refused a swapped link, %d skipped", landed, refused, skipped)
}
