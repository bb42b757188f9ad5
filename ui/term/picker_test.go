package term

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// dsh -r without an id in a terminal opens the picker: the recent sessions
// of the directory; typing filters them, enter resumes the chosen one (its
// history comes back), esc leaves the new session for a first prompt.
func TestResumePickerInTheTerminal(t *testing.T) {
	h := startUI(t, nil)
	h.send("hello there\r")
	// The turn's end (its stats line), not just its last text: an exit
	// while the turn is still closing disposes it, and the resumed
	// history would rightly end there.
	h.wait("› hello there", "That was the whole loop", " steps · in ")
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
		at := waitFor(0, "Resume a session", "esc starts a new one", "❯ hello there", "1 turn · ")
		if _, err := pw.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		switch line {
		case "hel\r":
			waitFor(at, "── resumed session", "› hello there")
		case "zzz":
			waitFor(at, "filter › zzz", "no session matches (1 in this directory)")
			_, _ = pw.Write([]byte("\x1b"))
			waitFor(at, "a new session: type your first message")
			_, _ = pw.Write([]byte("what now\r"))
			waitFor(at, "› what now")
		}
		_, _ = pw.Write([]byte("/exit\r"))
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("no exit")
		}
		return stripANSI(out.String())
	}
	if s := pick("hel\r"); !strings.Contains(s, "That was the whole loop") {
		t.Fatalf("the picked session's history is not shown:\n%s", s)
	}
	// A filter nothing matches, then esc: the prompt is the new session's.
	if s := pick("zzz"); strings.Contains(s, "── resumed session") {
		t.Fatalf("a prompt resumed a session:\n%s", s)
	}
}

// Subagent children are folded into their root session's row (a
// grandchild too) unless all is asked for; rows are newest first.
func TestSessionRowsHideChildren(t *testing.T) {
	info := func(id, parent string, at int64, title string) store.Info {
		return store.Info{Header: session.Header{ID: session.ID(id), ParentSession: session.ID(parent)},
			Summary: store.Summary{Title: title, LastActivity: at, Turns: 1, Events: 9}}
	}
	infos := []store.Info{
		info("old", "", 10, "old work"),
		info("kid", "root", 40, ""),
		info("grandkid", "kid", 50, ""),
		info("root", "", 30, "fix the bug"),
		info("orphan", "gone", 60, ""),
	}
	rows := SessionRows(infos, false)
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s:%d", r.Header.ID, r.Children))
	}
	if strings.Join(got, " ") != "root:2 old:0" {
		t.Fatalf("rows: %v", got)
	}
	if d := rows[0].Describe(); d != "1 turn · 9 events · 2 subagents" {
		t.Fatalf("describe: %q", d)
	}
	all := SessionRows(infos, true)
	if len(all) != 5 || all[0].Header.ID != "orphan" || !strings.Contains(all[0].Describe(), "subagent of gone") {
		t.Fatalf("all: %+v", all)
	}
}
