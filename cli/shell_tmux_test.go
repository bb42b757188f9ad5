package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A ! command is the user's own, so it is not asked about, but it runs
// through the agent's bash tool like the model's commands: a deny rule in
// the settings refuses it (the file it would remove stays), and the kernel
// sandbox (workspace-write) keeps it from writing outside the workspace;
// neither refusal reaches the model, and what ran inside is context for
// the next request.
func TestShellModeObeysRulesAndSandboxInTmux(t *testing.T) {
	f := newTermFixture(t, "", chatText("Noted.", 10, 1))
	outside := t.TempDir()
	f.addSettings(t, `"permissions":{"deny":["Bash(rm:*)"]}`)
	f.write(t, "victim.txt", "keep me\n")
	tt := f.tmux(t, "--trust")
	s := tt.waitFor("local/m", "›", "default mode")

	tt.text("!rm victim.txt")
	tt.keys("Enter")
	tt.waitFor(`! rm victim.txt — not run: permission rule Bash(rm:*) from`, `denies "rm victim.txt"`)
	if _, err := os.Stat(filepath.Join(f.dir, "victim.txt")); err != nil {
		t.Fatalf("the denied ! command ran: %v", err)
	}

	sandboxed := strings.Contains(lastLines(s, 1), "sandbox: workspace-write")
	if sandboxed {
		tt.text("!touch " + filepath.Join(outside, "escaped") + " && echo wrote-outside")
		tt.keys("Enter")
		tt.waitFor("! touch "+filepath.Join(outside, "escaped"), "[exit code: 1]")
		if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
			t.Fatal("a ! command wrote outside the workspace under workspace-write")
		}
	} else {
		t.Logf("the kernel sandbox is not enforcing here; its part is skipped:\n%s", lastLines(s, 1))
	}
	tt.text("!echo inside > made.txt && cat made.txt")
	tt.keys("Enter")
	tt.waitFor("⎿ inside")
	if b, err := os.ReadFile(filepath.Join(f.dir, "made.txt")); err != nil || string(b) != "inside\n" {
		t.Fatalf("the ! command inside the workspace: %q %v", b, err)
	}

	tt.text("what now?")
	tt.keys("Enter")
	tt.waitFor("Noted.")
	var text strings.Builder
	msgs, _ := f.model.request(0)["messages"].([]any)
	for _, m := range msgs {
		c, _ := m.(map[string]any)["content"].(string)
		text.WriteString(c + "\n")
	}
	got := text.String()
	if strings.Contains(got, "victim.txt") {
		t.Fatalf("the denied command reached the model:\n%s", got)
	}
	if sandboxed && !strings.Contains(got, "escaped': No such file or directory\n[exit code: 1]</bash-output>") {
		t.Fatalf("the sandboxed command's failure is not in the request:\n%s", got)
	}
	if !strings.Contains(got, "<bash-output>inside</bash-output>") {
		t.Fatalf("the ! command's output is not in the request:\n%s", got)
	}
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}
