package acp

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

func TestFilterFrames(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		``,
		`not json`,
		`[{"jsonrpc":"2.0","id":2,"method":"x"}]`,
		`42`,
		`{"jsonrpc":"2.0","id":3,"method":7}`,
		`{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"y\"}\r",
		`{"jsonrpc":"2.0","id":6,"method":"z"}`, // no final newline
	}, "\n")
	var out bytes.Buffer
	w := &frameWriter{w: &out, spawn: func(f func()) { f() }}
	pr, pw := io.Pipe()
	var fwd []byte
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fwd, _ = io.ReadAll(pr)
	}()
	filterFrames(strings.NewReader(in), pw, w, nil, slog.New(slog.DiscardHandler))
	wg.Wait()
	wantFwd := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"y"}`,
		`{"jsonrpc":"2.0","id":6,"method":"z"}`,
	}, "\n") + "\n"
	if string(fwd) != wantFwd {
		t.Fatalf("forwarded\n%s\nwant\n%s", fwd, wantFwd)
	}
	replies := strings.Split(strings.TrimSpace(out.String()), "\n")
	wantCodes := []string{`-32700`, `-32600`, `-32600`, `"id":3,"error":{"code":-32600`, `-32600`, `-32600`}
	if len(replies) != len(wantCodes) {
		t.Fatalf("replies %q", replies)
	}
	for i, c := range wantCodes {
		if !strings.Contains(replies[i], c) || !strings.HasPrefix(replies[i], `{"jsonrpc":"2.0","id":`) {
			t.Errorf("reply %d = %s, want %s", i, replies[i], c)
		}
	}
}

func TestFilterFramesTooLong(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("a", maxFrame) + `"}`
	// The client's answer to our request 7, too long: request 7 fails.
	answer := `{"jsonrpc":"2.0","id":7,"result":{"content":"` + strings.Repeat("a", maxFrame) + `"}}`
	in := long + "\n" + answer + "\n" + `{"jsonrpc":"2.0","id":2,"method":"y"}` + "\n"
	var out bytes.Buffer
	w := &frameWriter{w: &out, spawn: func(f func()) { f() }}
	pr, pw := io.Pipe()
	var fwd []byte
	done := make(chan struct{})
	go func() {
		fwd, _ = io.ReadAll(pr)
		close(done)
	}()
	filterFrames(strings.NewReader(in), pw, w, nil, slog.New(slog.DiscardHandler))
	<-done
	wantFwd := `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error: the client's response exceeds 8 MiB"}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"y"}` + "\n"
	if string(fwd) != wantFwd || out.String() != `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request: frame exceeds 8 MiB"}}`+"\n" {
		t.Fatalf("forwarded %q replies %q", fwd, out.String())
	}
}

// An oversized frame is answered with the id its first bytes hold, as a
// request or a response.
func TestPrefixID(t *testing.T) {
	pad := strings.Repeat("a", 2*keptPrefix)
	for _, c := range []struct {
		frame, want string
		kind        int
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"x":"` + pad, `7`, frameRequest},
		{`{"jsonrpc":"2.0","id":"r-1","params":"` + pad, `"r-1"`, frameRequest},
		{` { "Method" : "m", "ID" : -3 , "params":[` + pad, `-3`, frameRequest},
		{`{"jsonrpc":"2.0","id":4,"result":{"content":"` + pad, `4`, frameResponse},
		{`{"jsonrpc":"2.0","error":{"message":"` + pad, ``, frameUnknown},
		{`{"jsonrpc":"2.0","id":5,"` + pad, `5`, frameUnknown},
		{`{"jsonrpc":"2.0","method":"m","params":{"id":5,"x":"` + pad, ``, frameRequest},   // not top level
		{`{"jsonrpc":"2.0","method":"m","params":"` + pad + `","id":9}`, ``, frameRequest}, // after the cut
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"m","params":"` + pad, ``, frameRequest},  // not an id
		{`{"jsonrpc":"2.0","id":null,"method":"m","params":"` + pad, ``, frameRequest},
		{`{"jsonrpc":"2.0","id":12`, ``, frameUnknown}, // cut inside the number
		{`[{"id":1}]` + pad, ``, frameUnknown},
	} {
		head := c.frame[:min(len(c.frame), keptPrefix)]
		if id, kind := prefixID([]byte(head)); string(id) != c.want || kind != c.kind {
			t.Errorf("prefixID(%.60q) = %q %d, want %q %d", head, id, kind, c.want, c.kind)
		}
	}
}

// A cancel covers the prompts before it on the wire, whichever handler
// runs first, and never the prompts after it.
func TestPromptOrder(t *testing.T) {
	var o promptOrder
	prompt := inbound{method: "session/prompt", params: []byte(`{"sessionId":"s","prompt":[]}`)}
	cancel := inbound{method: "session/cancel", params: []byte(`{"sessionId":"s"}`)}
	invalid := inbound{method: "session/prompt", params: []byte(`{"sessionId":"s"}`)} // the library refuses it

	// prompt 1, cancel, prompt 2 on the wire; the cancel's handler first.
	o.note(prompt)
	o.note(invalid)
	o.note(cancel)
	o.note(prompt)
	mark, ok := o.take("s")
	if !ok || mark != 1 {
		t.Fatalf("take = %d %v", mark, ok)
	}
	one, two := o.start("s"), o.start("s")
	if !o.cancelled("s", one) || o.cancelled("s", two) {
		t.Fatalf("cancelled(1) %v cancelled(2) %v", o.cancelled("s", one), o.cancelled("s", two))
	}
	o.finish("s")
	o.finish("s")
	if len(o.sessions) != 0 {
		t.Fatalf("numbers kept after every handler returned: %+v", o.sessions["s"])
	}
	// A cancel with no prompt before it covers none of the later ones,
	// its handler running late or early.
	o.note(cancel)
	o.note(prompt)
	n := o.start("s")
	if mark, ok := o.take("s"); !ok || mark >= n || o.cancelled("s", n) {
		t.Fatalf("a cancel before the prompt covers it: mark %d ord %d", mark, n)
	}
	o.finish("s")
	if _, ok := o.take("s"); ok || len(o.sessions) != 0 {
		t.Fatalf("left over: %+v", o.sessions)
	}
}

func TestAfterResponseHook(t *testing.T) {
	var out bytes.Buffer
	ran := make(chan struct{}, 2)
	w := &frameWriter{w: &out, spawn: func(f func()) { f() }}
	w.afterResponse([]byte(`"sessionId":"abc"`), func() { ran <- struct{}{} })
	// A notification naming the session does not fire it; the response does.
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"abc"}}` + "\n"))
	if len(ran) != 0 {
		t.Fatal("fired on a notification")
	}
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":3,"result":{"sessionId":"abc"}}` + "\n"))
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":4,"result":{"sessionId":"abc"}}` + "\n"))
	if len(ran) != 1 {
		t.Fatalf("fired %d times", len(ran))
	}
}
