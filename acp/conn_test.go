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
	filterFrames(strings.NewReader(in), pw, w, slog.New(slog.DiscardHandler))
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
	in := long + "\n" + `{"jsonrpc":"2.0","id":2,"method":"y"}` + "\n"
	var out bytes.Buffer
	w := &frameWriter{w: &out, spawn: func(f func()) { f() }}
	pr, pw := io.Pipe()
	var fwd []byte
	done := make(chan struct{})
	go func() {
		fwd, _ = io.ReadAll(pr)
		close(done)
	}()
	filterFrames(strings.NewReader(in), pw, w, slog.New(slog.DiscardHandler))
	<-done
	if string(fwd) != `{"jsonrpc":"2.0","id":2,"method":"y"}`+"\n" || !strings.Contains(out.String(), "-32600") {
		t.Fatalf("forwarded %q replies %q", fwd, out.String())
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
