package cli

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startShellTmux starts an interactive bash (job control on) under a
// private tmux server and types the dsh command line into it, so ctrl-z
// stops dsh and fg brings it back as in a user's terminal. The shell's
// prompt is "SHELL$ ".
func (s termProject) startShellTmux(t *testing.T, args ...string) *tmuxTerm {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	tt := &tmuxTerm{t: t, socket: fmt.Sprintf("dsh-test-%d-%d", os.Getpid(), time.Now().UnixNano()), name: "dsh"}
	tt.tmux("new-session", "-d", "-s", tt.name, "-x", "110", "-y", "40",
		"env PS1='SHELL$ ' HISTFILE=/dev/null bash --norc --noprofile -i")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", tt.socket, "kill-server").Run() })
	tt.waitUntil(func(scr string) bool { return strings.HasSuffix(strings.TrimSpace(scr), "SHELL$") }, "the shell's prompt")
	tt.text(fmt.Sprintf("cd %q && env -u DEEPSEEK_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u DSH_MODEL -u NO_COLOR DSH_HOME=%q %q --model local/m --trust %s; echo DSH-EXITED:$?",
		s.dir, s.home, s.bin, strings.Join(args, " ")))
	tt.keys("Enter")
	tt.waitFor("local/m", "›", "default mode")
	return tt
}

// visible is the pane as it shows now, without the scrollback.
func (tt *tmuxTerm) visible() string {
	return tt.tmux("capture-pane", "-p", "-J", "-t", tt.name)
}

// stopAndContinue presses ctrl-z, waits for the shell's prompt (dsh's
// footer gone from the screen's foot), types fg and waits until dsh has
// the screen again: its footer at the bottom and every one of want
// visible on the pane (not only in the scrollback).
func (tt *tmuxTerm) stopAndContinue(want ...string) string {
	tt.t.Helper()
	tt.keys("C-z")
	tt.waitUntil(func(scr string) bool {
		return strings.HasSuffix(strings.TrimSpace(scr), "SHELL$") && strings.Contains(scr, "Stopped")
	}, "the shell's prompt after ctrl-z")
	if tail := lastLines(tt.visible(), 3); strings.Contains(tail, "default mode") {
		tt.t.Fatalf("dsh's footer is still drawn under the shell's prompt:\n%s", tail)
	}
	tt.text("fg")
	tt.keys("Enter")
	return tt.waitUntil(func(string) bool {
		vis := tt.visible()
		if !strings.Contains(lastLines(vis, 3), "default mode") {
			return false
		}
		for _, w := range want {
			if !strings.Contains(vis, w) {
				return false
			}
		}
		return true
	}, fmt.Sprintf("dsh back after fg with %q", want))
}

// Ctrl-Z hands the terminal to the shell and fg brings dsh back, drawn
// afresh with what was on screen before, whether it was idle, asking a
// question or streaming an answer; keys typed afterwards reach it (raw
// mode is back) and turns complete.
func TestSuspendInTmux(t *testing.T) {
	_, srv := newPromptModel(t,
		promptStep{key: "say hello", text: "Hello from the model."},
		promptStep{key: "list files", call: "ls -la"},
		promptStep{key: "keep talking", text: "Streaming part one", hold: true},
	)
	s := newTermProject(t, srv, unconfined)
	tt := s.startShellTmux(t)
	tt.prompt("say hello")
	tt.waitFor("Hello from the model.")
	tt.idle()

	// Idle, with a half-typed line kept.
	tt.text("half typed")
	tt.stopAndContinue("› say hello", "Hello from the model.", "› half typed")
	tt.keys("C-u")
	tt.prompt("after the first resume")
	tt.waitFor("Finished: after the first resume")
	tt.idle()

	// An open question comes back and takes its answer.
	tt.prompt("list files")
	tt.waitFor("? Allow Bash ls -la", "[y] allow once")
	tt.stopAndContinue("Hello from the model.", "? Allow Bash ls -la", "[y] allow once")
	tt.keys("y")
	tt.waitFor("Finished: list files")
	tt.idle()

	// A streaming answer: its partial text and the spinner come back; esc
	// still interrupts it.
	tt.prompt("keep talking")
	tt.waitFor("Streaming part one", "to interrupt")
	tt.stopAndContinue("Streaming part one", "to interrupt")
	tt.keys("Escape")
	tt.waitFor("interrupted")
	tt.idle()

	tt.prompt("the last one")
	tt.waitFor("Finished: the last one")
	// The job fg resumed is dsh alone (the echo after it in the command
	// line is not part of it): the shell's prompt shows that it exited.
	tt.idle()
	tt.prompt("/exit")
	tt.waitUntil(func(scr string) bool {
		return strings.Contains(scr, "Session saved") && strings.HasSuffix(strings.TrimSpace(scr), "SHELL$")
	}, "dsh's exit")
}
