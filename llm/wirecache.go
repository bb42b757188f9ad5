package llm

import (
	"bytes"
	"sync"
)

// WireCache remembers a provider adapter's encoding of each message of a
// session's previous request, so the next request re-encodes only what is
// new. An agent's history grows by appending: without it every step would
// re-encode (and re-escape) everything the session ever sent, which is most
// of a step's CPU once tool outputs are large.
//
// A cached encoding is reused only for a message equal to the one it was made
// from: the same role and the same blocks, field by field (strings compare
// by content, which is O(1) when they share memory, as an unchanged history
// does). Nothing is trusted by identity, so a message replaced by compaction,
// a tool call whose arguments were rewritten, or a caller that broke the
// rule and edited a message in place all simply miss. Each encoding is also
// kept per variant: an adapter whose encoding of a message depends on where
// it sits (OpenAI-style reasoning replay) says which variant it needs.
//
// Only the latest request of each session is remembered (keyed by
// [Request.SessionID]), so what compaction replaced is released with the
// request after it; sessions not seen for a while are dropped
// least-recently-used first. The zero value is ready to use and safe for
// concurrent use; a session's two concurrent requests simply do not share.
type WireCache[E any] struct {
	mu     sync.Mutex
	chains map[string]*wireChain[E]
	clock  uint64
	// Sessions bounds how many sessions are remembered (default 64).
	Sessions int
}

type wireChain[E any] struct {
	entries []wireEntry[E]
	used    uint64
}

type wireEntry[E any] struct {
	role    Role
	blocks  []Block // what was encoded: a copy of the message's blocks
	variant uint8
	enc     E
}

// Encode returns the encodings of msgs in order: the cached one where the
// session's previous request held an equal message in the same variant,
// else encode(m, variant). variant may be nil (every message variant 0).
func (c *WireCache[E]) Encode(session string, msgs []Message, variant func(i int) uint8, encode func(m Message, variant uint8) E) []E {
	prev := c.checkout(session)
	out := make([]E, len(msgs))
	next := make([]wireEntry[E], len(msgs))
	// Positional matching with an offset: appends keep positions, pruning
	// replaces one message in place, and a summary replaces a span with one
	// message, after which the rest of the history sits at a fixed offset
	// further back in prev. Resyncing that offset scans forward, within a
	// budget so a history that changed everywhere costs O(n), not O(n²).
	off, budget := 0, 2*len(msgs)+8
	for i, m := range msgs {
		v := uint8(0)
		if variant != nil {
			v = variant(i)
		}
		var hit *wireEntry[E]
		if j := i + off; j < len(prev) && prev[j].matches(m, v) {
			hit = &prev[j]
		} else {
			for j := i + off + 1; j < len(prev) && budget > 0; j++ {
				budget--
				if prev[j].matches(m, v) {
					hit, off = &prev[j], j-i
					break
				}
			}
		}
		if hit != nil {
			next[i], out[i] = *hit, hit.enc
			continue
		}
		out[i] = encode(m, v)
		next[i] = wireEntry[E]{role: m.Role, blocks: snapshot(m.Content), variant: v, enc: out[i]}
	}
	c.checkin(session, next)
	return out
}

func (c *WireCache[E]) checkout(session string) []wireEntry[E] {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.chains[session]
	if ch == nil {
		return nil
	}
	delete(c.chains, session)
	return ch.entries
}

func (c *WireCache[E]) checkin(session string, entries []wireEntry[E]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.chains == nil {
		c.chains = map[string]*wireChain[E]{}
	}
	c.clock++
	c.chains[session] = &wireChain[E]{entries: entries, used: c.clock}
	limit := c.Sessions
	if limit <= 0 {
		limit = 64
	}
	for len(c.chains) > limit {
		oldest, at := "", ^uint64(0)
		for k, ch := range c.chains {
			if ch.used < at {
				oldest, at = k, ch.used
			}
		}
		delete(c.chains, oldest)
	}
}

func (e *wireEntry[E]) matches(m Message, v uint8) bool {
	return e.variant == v && e.role == m.Role && blocksEqual(e.blocks, m.Content)
}

// snapshot copies the block structs (and nested content) so that a later
// in-place edit of the caller's message cannot change what the entry says
// was encoded. Strings are immutable and shared.
func snapshot(bs []Block) []Block {
	if bs == nil {
		return nil
	}
	out := make([]Block, len(bs))
	for i, b := range bs {
		out[i] = b
		if b.Content != nil {
			out[i].Content = snapshot(b.Content)
		}
		if b.Raw != nil {
			out[i].Raw = bytes.Clone(b.Raw)
		}
	}
	return out
}

// blocksEqual compares every field of every block. Two nil-vs-empty
// slices differ: encoders may treat them differently.
func blocksEqual(a, b []Block) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Type != y.Type || x.IsError != y.IsError || len(x.Text) != len(y.Text) ||
			x.Text != y.Text || x.Signature != y.Signature || x.Redacted != y.Redacted ||
			x.ID != y.ID || x.Name != y.Name || x.Arguments != y.Arguments ||
			x.ToolCallID != y.ToolCallID || x.URL != y.URL || x.MimeType != y.MimeType ||
			x.Cache != y.Cache || (x.Raw == nil) != (y.Raw == nil) || !bytes.Equal(x.Raw, y.Raw) ||
			!blocksEqual(x.Content, y.Content) {
			return false
		}
	}
	return true
}
