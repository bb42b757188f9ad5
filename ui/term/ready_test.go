package term

import (
	"strings"
	"sync"
	"testing"
)

// Ready is called once, when the prompt is on the screen and before the
// first key is read (the CLI gives back start-up's pages then): a key sent
// at once is handled after it, and later prompts do not call it again.
func TestReadyOnceThePromptIsDrawn(t *testing.T) {
	var (
		mu     sync.Mutex
		calls  int
		screen string
	)
	h := startUITerm(t, nil, func(h *harness, o *Options) {
		o.Ready = func() {
			mu.Lock()
			defer mu.Unlock()
			calls++
			screen = h.screen()
		}
	}, nil)
	h.send("hello\r")
	h.wait("hello")
	h.wait("›")
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("Ready called %d times, want once", calls)
	}
	if !strings.Contains(screen, "›") {
		t.Fatalf("Ready called before the prompt was drawn; the screen then:\n%s", screen)
	}
	if strings.Contains(screen, "hello") {
		t.Fatalf("Ready called after a key was read; the screen then:\n%s", screen)
	}
}
