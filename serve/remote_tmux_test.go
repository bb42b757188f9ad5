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

// startShellPane is startPane with an interactive bash (job control on)
// that the command line is typed into, so ctrl-z stops the command and fg
// continues it; the shell's prompt is "SHELL$ ".
func startShellPane(t *testing.T, dir string, env []string, args ...string) *pane {
	t.Helper()
	// The environment is the shell's, not typed: a token stays off the
	// screen.
	p := startPane(t, dir, append([]string{"PS1=SHELL$ ", "HISTFILE=/dev/null"}, env...), "bash", "--norc", "--noprofile", "-i")
	p.waitUntil("the shell's prompt", func(vis string) bool { return strings.HasSuffix(strings.TrimSpace(vis), "SHELL$") })
	var quoted []string
	for _, a := range args {
		quoted = append(quoted, fmt.Sprintf("%q", a))
	}
	p.tmux("send-keys", "-t", "dsh", "-l", strings.Join(quoted, " ")+"; echo DSH-EXITED:$?")
	p.tmux("send-keys", "-t", "dsh", "Enter")
	return p
}

// waitUntil polls the visible pane until ok holds.
func (p *pane) waitUntil(what string, ok func(visible string) bool) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		vis := p.tmux("capture-pane", "-p", "-J", "-t", "dsh")
		if ok(vis) {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %s; screen:\n%s", what, vis)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
// answered from the terminal (which unblocks the agent), ctrl-z and fg
// from an interactive shell, and a message typed into it and edited in
// the vim mode the user's settings ask for; ctrl-d detaches and leaves
// the session in the server.
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

	// The user's own settings (not the server's) ask for the vim mode.
	userHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(userHome, "settings.json"), []byte(`{"editorMode":"vim"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startShellPane(t, t.TempDir(), []string{"DSH_HOME=" + userHome, "DSH_SERVE_TOKEN=" + admin},
		dshtest.Bin, "remote", "attach", string(s.ID), "--server", srv.URL)
	p.wait("attached to session "+string(s.ID), "hello from the scripted model, answering say hello", "-- INSERT --")

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

	// Ctrl-Z hands the terminal to the shell; fg brings the attached
	// terminal back with what it showed.
	p.tmux("send-keys", "-t", "dsh", "C-z")
	p.waitUntil("the shell after ctrl-z", func(vis string) bool {
		return strings.Contains(vis, "Stopped") && strings.HasSuffix(strings.TrimSpace(vis), "SHELL$")
	})
	p.tmux("send-keys", "-t", "dsh", "-l", "fg")
	p.tmux("send-keys", "-t", "dsh", "Enter")
	p.waitUntil("the attached terminal after fg", func(vis string) bool {
		return strings.Contains(vis, "-- INSERT --  remote "+string(s.ID)) && strings.Contains(vis, "done")
	})

	// A message typed in the terminal, edited in vim's NORMAL mode,
	// starts a turn in the server, whose text streams back.
	p.tmux("send-keys", "-t", "dsh", "-l", "say it frm tmux")
	p.tmux("send-keys", "-t", "dsh", "Escape")
	p.wait("-- NORMAL --")
	p.tmux("send-keys", "-t", "dsh", "-l", "bbcwfrom")
	p.tmux("send-keys", "-t", "dsh", "Enter")
	p.wait("hello from the scripted model, answering say it from tmux")
	waitFor(t, "the third turn", func() bool {
		got, err := c.Session(ctx, s.ID)
		return err == nil && got.Turns == 3
	})

	// ctrl-d detaches; the session stays.
	p.tmux("send-keys", "-t", "dsh", "C-d")
	// The job fg continued is dsh alone (the echo after it ran when it
	// stopped): the shell's prompt shows it ended.
	p.waitUntil("the detach", func(vis string) bool {
		return strings.Contains(vis, "Detached") && strings.HasSuffix(strings.TrimSpace(vis), "SHELL$")
	})
	if got, err := c.Session(ctx, s.ID); err != nil || got.Turns != 3 {
		t.Fatalf("after detaching: %v %+v", err, got)
	}
}
