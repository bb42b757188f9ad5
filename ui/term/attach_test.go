package term

import (
	"context"
	"io"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// fakeRemote is a served session with no events that records what the
// attached terminal sends.
type fakeRemote struct {
	mu   sync.Mutex
	sent []string
}

func (r *fakeRemote) Events(ctx context.Context, _ int64) iter.Seq2[session.Event, error] {
	return func(func(session.Event, error) bool) { <-ctx.Done() }
}

func (r *fakeRemote) Send(_ context.Context, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, text)
	return nil
}

func (r *fakeRemote) Steer(ctx context.Context, text string) error            { return r.Send(ctx, text) }
func (r *fakeRemote) Cancel(context.Context, string) error                    { return nil }
func (r *fakeRemote) Answer(context.Context, llm.CallID, tool.Approval) error { return nil }

func (r *fakeRemote) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sent...)
}

// The attached terminal edits as the local one does with "editorMode":
// "vim" (the footer names the mode; NORMAL commands edit what is sent),
// and says why ctrl-v and ctrl-z do nothing rather than ignoring them.
func TestAttachVimModeAndKeys(t *testing.T) {
	in, typed := io.Pipe()
	out := &syncBuffer{}
	r := &fakeRemote{}
	ended := make(chan error, 1)
	go func() {
		ended <- Attach(context.Background(), AttachOptions{
			In: in, Out: out, Remote: r, ID: "s1", Cwd: "/w", Model: "m", Vim: true, NoColor: true,
			Width: func() int { return 100 }, Height: func() int { return 30 }, Env: func(string) string { return "" },
		})
	}()
	waitOut := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the output:\n%s", what, out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	typeKeys := func(s string) {
		t.Helper()
		if _, err := io.WriteString(typed, s); err != nil {
			t.Fatal(err)
		}
	}
	waitOut("-- INSERT --")
	typeKeys("say hello wrold")
	typeKeys("\x1b")
	waitOut("-- NORMAL --")
	typeKeys("bcw")
	waitOut("-- INSERT --")
	typeKeys("world\x1b")
	time.Sleep(100 * time.Millisecond) // the lone esc is told from a sequence by a pause
	typeKeys("0x\r")
	deadline := time.Now().Add(10 * time.Second)
	for len(r.messages()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("nothing sent; output:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := r.messages(); len(got) != 1 || got[0] != "ay hello world" {
		t.Fatalf("sent %q, want the vim-edited %q", got, "ay hello world")
	}
	typeKeys("\x16")
	waitOut("images cannot be sent to a session attached over dsh serve")
	typeKeys("\x1a")
	waitOut("ctrl-z: not a terminal, nothing to suspend")
	typeKeys("\x04")
	select {
	case err := <-ended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ctrl-d did not detach")
	}
}
