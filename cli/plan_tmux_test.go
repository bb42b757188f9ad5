package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// toolReply is the last tool message of the newest request: what the model
// read for its last call.
func (m *promptModel) toolReply() string {
	got := ""
	for _, msg := range m.last().Messages {
		if msg.Role == "tool" {
			got = msg.text()
		}
	}
	return got
}

// startPlanning starts dsh in plan mode (start waits for the default mode's
// footer).
func (s termProject) startPlanning(t *testing.T) *tmuxTerm {
	t.Helper()
	tt := startTmux(t, s.bin, s.dir, s.home, "--model", "local/m", "--trust", "--permission-mode", "plan")
	tt.waitFor("local/m", "›", "plan mode")
	return tt
}

// The plan card: approving switches to the mode the user picks (default,
// acceptEdits, or bypassPermissions after a confirmation), keeping on
// planning and rejecting with feedback leave plan mode on; the footer
// shows the mode and the model reads each outcome. Settings that disable
// bypassPermissions take it off the card.
func TestPlanApprovalInTmux(t *testing.T) {
	m, srv := newPromptModel(t,
		promptStep{key: "plan edits", plan: "1. Edit main.go\n2. Run the tests"},
		promptStep{key: "plan more", plan: "1. Look around"},
		promptStep{key: "plan badly", plan: "1. Rewrite everything"},
		promptStep{key: "plan boldly", plan: "1. Delete the build directory"},
		promptStep{key: "plan plainly", plan: "1. Ask before each edit"},
	)
	s := newTermProject(t, srv, "")
	footer := func(tt *tmuxTerm, want string) {
		t.Helper()
		tt.waitUntil(func(s string) bool { return strings.Contains(lastLines(s, 1), want) }, "the footer to say "+want)
	}
	reply := func(prompt string, want ...string) {
		t.Helper()
		got := m.toolReply()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Fatalf("after %q the model read %q, want %q in it", prompt, got, w)
			}
		}
	}
	tt := s.startPlanning(t)
	footer(tt, "⏸ plan mode")

	// Approve into acceptEdits.
	tt.prompt("plan edits")
	tt.waitFor("Plan ready: approve it and leave plan mode?", "│   1. Edit main.go", "[y] approve, default mode", "[e] approve, accept edits", "[b] approve, bypass permissions", "[k] keep planning", "[n] reject with feedback")
	tt.keys("e")
	tt.waitFor("Finished: plan edits")
	footer(tt, "⏵⏵ accept edits")
	reply("plan edits", "approved the plan", "acceptEdits")

	// Keep planning: plan mode stays, the model is told to go on.
	tt.keys("BTab")
	footer(tt, "⏸ plan mode")
	tt.prompt("plan more")
	tt.waitFor("│   1. Look around", "[k] keep planning")
	tt.keys("k")
	tt.waitFor("Finished: plan more")
	footer(tt, "⏸ plan mode")
	reply("plan more", "The user denied this tool call", "keep planning", "Plan mode stays on")

	// Reject with feedback: the feedback reaches the model.
	tt.prompt("plan badly")
	tt.waitFor("│   1. Rewrite everything", "[n] reject with feedback")
	tt.keys("n")
	tt.waitFor("What should change?")
	tt.text("touch only the parser")
	tt.keys("Enter")
	tt.waitFor("Finished: plan badly")
	footer(tt, "⏸ plan mode")
	reply("plan badly", "the plan is rejected", "touch only the parser")

	// Bypass asks once more; anything but y goes back to the choices.
	tt.prompt("plan boldly")
	tt.waitFor("│   1. Delete the build directory", "[b] approve, bypass permissions")
	tt.keys("b")
	tt.waitFor("Approve into bypassPermissions?")
	footer(tt, "⏸ plan mode")
	tt.keys("x")
	tt.waitFor("[e] approve, accept edits")
	tt.keys("b")
	tt.waitFor("Approve into bypassPermissions?")
	tt.keys("y")
	tt.waitFor("Finished: plan boldly")
	footer(tt, "⚠ bypass permissions")
	reply("plan boldly", "approved the plan", "bypassPermissions")

	// Approve into the default mode.
	tt.keys("BTab", "BTab", "BTab")
	footer(tt, "⏸ plan mode")
	tt.prompt("plan plainly")
	tt.waitFor("│   1. Ask before each edit", "[y] approve, default mode")
	tt.keys("y")
	tt.waitFor("Finished: plan plainly")
	footer(tt, "default mode")
	reply("plan plainly", "approved the plan", "default")
	tt.exit()

	// Settings disable bypassPermissions: the card does not offer it and
	// b does nothing.
	s = newTermProject(t, srv, `,"permissions":{"disableBypassPermissionsMode":"disable"}`)
	tt = s.startPlanning(t)
	tt.prompt("plan boldly again")
	scr := tt.waitFor("│   1. Delete the build directory", "[k] keep planning")
	if strings.Contains(scr, "bypass permissions") {
		t.Fatalf("the card offers bypassPermissions although settings disable it:\n%s", scr)
	}
	tt.keys("b")
	tt.keys("k")
	tt.waitFor("Finished: plan boldly again")
	if strings.Contains(tt.screen(), "Approve into bypassPermissions?") {
		t.Fatal("b asked for bypassPermissions although settings disable it")
	}
	footer(tt, "⏸ plan mode")
	tt.exit()
}

// A policy check that cannot pass is made before asking: an edit of a file
// the agent has not read is refused without a question, the model reads
// the policy's reason, and the file is unchanged; once read, the same
// edit asks.
func TestPolicyBeforeAskingInTmux(t *testing.T) {
	edit := map[string]string{"file_path": "notes.txt", "old_string": "draft", "new_string": "final"}
	m, srv := newPromptModel(t,
		promptStep{key: "edit unread", tool: "edit", args: edit},
		promptStep{key: "read it", tool: "read", args: map[string]string{"file_path": "notes.txt"}},
		promptStep{key: "edit again", tool: "edit", args: edit},
	)
	s := newTermProject(t, srv, "")
	if err := os.WriteFile(filepath.Join(s.dir, "notes.txt"), []byte("a draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tt := s.start(t)
	tt.prompt("edit unread")
	scr := tt.waitFor("Finished: edit unread")
	if strings.Contains(scr, "? Allow") {
		t.Fatalf("an edit the read-before-edit policy refuses was put to the user:\n%s", scr)
	}
	if got := m.toolReply(); !strings.Contains(got, "you have not read it; read it first") {
		t.Fatalf("the model read %q, want the policy's reason", got)
	}
	if b, _ := os.ReadFile(filepath.Join(s.dir, "notes.txt")); string(b) != "a draft\n" {
		t.Fatalf("the refused edit changed the file: %q", b)
	}
	tt.idle()
	tt.prompt("read it")
	tt.waitFor("Finished: read it")
	tt.idle()
	tt.prompt("edit again")
	tt.waitFor("? Allow ", "notes.txt", "[n] deny")
	tt.keys("y")
	tt.waitFor("Finished: edit again")
	if b, _ := os.ReadFile(filepath.Join(s.dir, "notes.txt")); string(b) != "a final\n" {
		t.Fatalf("the approved edit: %q", b)
	}
	tt.exit()
}
