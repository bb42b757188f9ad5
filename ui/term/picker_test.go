package term

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// dsh -r without an id in a terminal opens the picker: the recent sessions
// of the directory, numbered; typing a number resumes that one (its
// history comes back), anything else starts a new session as a prompt.
func TestResumePickerInTheTerminal(t *testing.T) {
	h := startUI(t, nil)
	h.send("hello there\r")
	h.wait("› hello there", "That was the whole loop")
	h.send("/exit\r")
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit")
	}

	pick := func(line string) string {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pr, pw := io.Pipe()
		out := &syncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Options{In: pr, Out: out, App: h.app, Home: h.home, Cwd: h.cwd, NoColor: true, PickSession: true,
				Width: func() int { return 100 }, Height: func() int { return 40 }, Env: func(string) string { return "" }})
		}()
		defer pw.Close()
		waitFor := func(from int, subs ...string) int {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for {
				s := stripANSI(out.String())
				rest, all := s[min(from, len(s)):], true
				for _, sub := range subs {
					all = all && strings.Contains(rest, sub)
				}
				if all {
					return len(s)
				}
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for %q:\n%s", subs, rest)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		at := waitFor(0, "Recent sessions here", "type a number to resume it", " 1.", "hello there")
		if _, err := pw.Write([]byte(line + "\r")); err != nil {
			t.Fatal(err)
		}
		if line == "1" {
			waitFor(at, "── resumed session", "› hello there")
		} else {
			waitFor(at, "› "+line)
		}
		_, _ = pw.Write([]byte("/exit\r"))
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("no exit")
		}
		return stripANSI(out.String())
	}
	if s := pick("1"); !strings.Contains(s, "That was the whole loop") {
		t.Fatalf("the picked session's history is not shown:\n%s", s)
	}
	// Anything but a number is an ordinary first prompt of a new session.
	if s := pick("what now"); strings.Contains(s, "── resumed session") {
		t.Fatalf("a prompt resumed a session:\n%s", s)
	}
}
