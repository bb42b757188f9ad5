package serve_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
)

// pane is a detached tmux session running one command (a private tmux
// server per test).
type pane struct {
	t      *testing.T
	socket string
}

func startPane(t *testing.T, dir string, env []string, args ...string) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	p := &pane{t: t, socket: fmt.Sprintf("dsh-remote-%d-%d", os.Getpid(), time.Now().UnixNano())}
	var quoted []string
	for _, kv := range env {
		quoted = append(quoted, fmt.Sprintf("%q", kv))
	}
	for _, a := range args {
		quoted = append(quoted, fmt.Sprintf("%q", a))
	}
	cmd := fmt.Sprintf("cd %q && env -u NO_COLOR %s; echo DSH-EXITED:$?; sleep 600", dir, strings.Join(quoted, " "))
	p.tmux("new-session", "-d", "-s", "dsh", "-x", "110", "-y", "40", cmd)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.socket, "kill-server").Run() })
	return p
}

func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// wait polls the screen (with its scrollback) until every substring shows.
func (p *pane) wait(subs ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := p.tmux("capture-pane", "-p", "-J", "-S", "-300", "-t", "dsh")
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(s, sub)
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %q; screen:\n%s", subs, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRemoteAttachInTmux: dsh remote attach, a real process in a real
// terminal, shows a running session of a real dsh serve: its history, the
// text streamed by a turn another client started, a question of the agent
// answered from the terminal (which unblocks the agent), and a message
// typed into it; ctrl-d detaches and leaves the session in the server.
func TestRemoteAttachInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	e := dshtest.New(t, "..", reply)
	admin := token(t, e, "admin")
	srv := startServe(t, e, nil, "--root", e.Dir)
	ctx := context.Background()
	c := client.New(srv.URL, admin)
	s, err := c.CreateSession(ctx, api.CreateSession{Workspace: e.Dir, Prompt: "say hello"})
	if err != nil {
		t.Fatal(err)
	}
	collectTurn(t, c, s.ID, 0)

	p := startPane(t, t.TempDir(), []string{"DSH_HOME=" + e.Home, "DSH_SERVE_TOKEN=" + admin},
		dshtest.Bin, "remote", "attach", string(s.ID), "--server", srv.URL)
	p.wait("attached to session "+string(s.ID), "hello from the scripted model, answering say hello")

	// A turn another client starts streams in; its question is answered
	// here.
	target := filepath.Join(e.Dir, "from-the-terminal.txt")
	if _, err := c.Send(ctx, s.ID, "please write "+target); err != nil {
		t.Fatal(err)
	}
	screen := p.wait("Allow", "[y] allow once", "from-the-terminal.txt")
	if strings.Contains(screen, admin) {
		t.Fatal("the token is on the screen")
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("written before the answer")
	}
	p.tmux("send-keys", "-t", "dsh", "y")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(target); err == nil && string(b) == "written through the API" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the answer did not unblock the agent; screen:\n%s", p.wait())
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.wait("done")
	waitFor(t, "the turn's end", func() bool {
		got, err := c.Session(ctx, s.ID)
		return err == nil && got.Status != api.StatusRunning && got.Turns == 2
	})

	// A message typed in the terminal starts a turn in the server, whose
	// text streams back.
	p.tmux("send-keys", "-t", "dsh", "-l", "say it from tmux")
	p.tmux("send-keys", "-t", "dsh", "Enter")
	p.wait("hello from the scripted model, answering say it from tmux")
	waitFor(t, "the third turn", func() bool {
		got, err := c.Session(ctx, s.ID)
		return err == nil && got.Turns == 3
	})

	// ctrl-d detaches; the session stays.
	p.tmux("send-keys", "-t", "dsh", "C-d")
	p.wait("Detached", "DSH-EXITED:0")
	if got, err := c.Session(ctx, s.ID); err != nil || got.Turns != 3 {
		t.Fatalf("after detaching: %v %+v", err, got)
	}
}
