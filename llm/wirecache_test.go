package llm_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/dshq/dsh/llm"
)

// counting is a WireCache with an encoder that records what it encoded.
type counting struct {
	c       llm.WireCache[string]
	encoded []string
}

func (k *counting) encode(session string, msgs []llm.Message) []string {
	return k.c.Encode(session, msgs, nil, func(m llm.Message, _ uint8) string {
		s := llm.TextOf(m.Content)
		k.encoded = append(k.encoded, s)
		return "<" + s + ">"
	})
}

func (k *counting) take() []string { out := k.encoded; k.encoded = nil; return out }

func msg(s string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Text(s)}}
}

func history(n int) []llm.Message {
	var out []llm.Message
	for i := range n {
		out = append(out, msg(fmt.Sprint("m", i)))
	}
	return out
}

// TestWireCacheEncodesOnlyWhatChanged: a request after an append, a prune
// (one message replaced), a summary (a span replaced by one message) or a
// rewritten message encodes only the new messages; the result is always the
// full, ordered list.
func TestWireCacheEncodesOnlyWhatChanged(t *testing.T) {
	var k counting
	h := history(6)
	k.encode("s", h)
	if got := k.take(); len(got) != 6 {
		t.Fatalf("first request encoded %v, want all six", got)
	}
	steps := []struct {
		name   string
		change func([]llm.Message) []llm.Message
		want   []string
	}{
		{"append", func(h []llm.Message) []llm.Message { return append(h, msg("m6")) }, []string{"m6"}},
		{"nothing", func(h []llm.Message) []llm.Message { return h }, nil},
		{"prune", func(h []llm.Message) []llm.Message {
			return slices.Concat(h[:2], []llm.Message{msg("pruned")}, h[3:])
		}, []string{"pruned"}},
		{"summary", func(h []llm.Message) []llm.Message {
			return slices.Concat(h[:1], []llm.Message{msg("summary")}, h[5:])
		}, []string{"summary"}},
		{"clone", func(h []llm.Message) []llm.Message {
			return slices.Concat(h[:1], []llm.Message{h[1].Clone()}, h[2:])
		}, nil}, // equal content in new memory is still a hit
		{"in-place edit", func(h []llm.Message) []llm.Message {
			h[0].Content[0].Text = "edited"
			return h
		}, []string{"edited"}},
	}
	for _, s := range steps {
		h = s.change(h)
		got := k.encode("s", h)
		if enc := k.take(); !slices.Equal(enc, s.want) {
			t.Errorf("%s: encoded %q, want %q", s.name, enc, s.want)
		}
		var want []string
		for _, m := range h {
			want = append(want, "<"+llm.TextOf(m.Content)+">")
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", s.name, got, want)
		}
	}
}

// TestWireCacheVariantsAndSessions: an encoding is reused only in the
// variant it was made for, and sessions do not share (or evict) each
// other's entries below the session bound.
func TestWireCacheVariantsAndSessions(t *testing.T) {
	var c llm.WireCache[string]
	n := 0
	enc := func(m llm.Message, v uint8) string { n++; return fmt.Sprint(llm.TextOf(m.Content), v) }
	h := history(3)
	c.Encode("a", h, nil, enc)
	got := c.Encode("a", h, func(i int) uint8 { return uint8(i % 2) }, enc)
	if n != 4 || !slices.Equal(got, []string{"m00", "m11", "m20"}) {
		t.Fatalf("variants: %d encodings, got %q", n, got)
	}
	n = 0
	c.Encode("b", history(2), nil, enc)
	c.Encode("a", h, func(i int) uint8 { return uint8(i % 2) }, enc)
	if n != 2 {
		t.Fatalf("session b's request cost session a its cache: %d encodings, want 2 (b's own)", n)
	}
	c.Sessions = 1
	c.Encode("b", history(2), nil, enc)
	n = 0
	c.Encode("a", h, nil, enc)
	if n != 3 {
		t.Fatalf("with room for one session, a should have been evicted: %d encodings", n)
	}
}

// TestWireCacheReleasesReplaced: once a request no longer holds a message
// (compaction replaced it), the cache does not keep its text alive.
func TestWireCacheReleasesReplaced(t *testing.T) {
	var c llm.WireCache[int]
	defer runtime.KeepAlive(&c) // the cache itself stays reachable throughout
	big := strings.Repeat("tool output ", 1<<16)
	freed := make(chan struct{})
	runtime.AddCleanup(unsafe.StringData(big), func(ch chan struct{}) { close(ch) }, freed)
	enc := func(m llm.Message, _ uint8) int { return len(llm.TextOf(m.Content)) }
	c.Encode("s", []llm.Message{msg("prompt"), msg(big)}, nil, enc)
	big = ""
	c.Encode("s", []llm.Message{msg("prompt"), msg("summary")}, nil, enc)
	for range 100 {
		runtime.GC()
		select {
		case <-freed:
			return
		default:
			runtime.Gosched()
		}
	}
	t.Fatal("the replaced message's text is still reachable after 100 GC cycles")
}
