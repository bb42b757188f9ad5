package term

import (
	"sync"

	"github.com/dshq/dsh/llm"
)

// feedKeep bounds the output held for one call between two UI passes: a
// command printing faster than the screen redraws loses only what would
// have scrolled out of its tail anyway.
const feedKeep = 64 << 10

// outputFeed carries running calls' output from the tools' goroutines to
// the UI goroutine without flooding its queue: output collects here per
// call, and one outputMsg is queued per batch, however many pieces arrive
// before the UI takes it.
type outputFeed struct {
	mu      sync.Mutex
	pending map[llm.CallID][]byte
	order   []llm.CallID
}

// outputMsg tells the UI goroutine that output waits in the feed.
type outputMsg struct{ cur *current }

// add keeps p for call id and reports whether the UI must be told (the
// feed was empty).
func (f *outputFeed) add(id llm.CallID, p []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending == nil {
		f.pending = map[llm.CallID][]byte{}
	}
	first := len(f.pending) == 0
	b, seen := f.pending[id]
	if !seen {
		f.order = append(f.order, id)
	}
	b = append(b, p...)
	if len(b) > feedKeep {
		b = append(b[:0], b[len(b)-feedKeep:]...)
	}
	f.pending[id] = b
	return first
}

// take returns what collected, by call, in the order calls first wrote.
func (f *outputFeed) take() (ids []llm.CallID, out map[llm.CallID][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids, out = f.order, f.pending
	f.order, f.pending = nil, nil
	return ids, out
}
