package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// /init typed at the prompt runs the same built-in command as `dsh init`:
// the model is told to write AGENTS.md, may write it without a question
// (the command's allowed tools), and the file it wrote is on disk when the
// turn ends; a write elsewhere is not among those tools, so it asks.
func TestInitInTmux(t *testing.T) {
	f := newTermFixture(t, "",
		chatTool("c1", "write", map[string]string{"file_path": "AGENTS.md", "content": "# Agents\n\nRun go test ./... before committing.\n"}),
		chatText("Wrote AGENTS.md.", 30, 4),
		chatTool("c2", "write", map[string]string{"file_path": "OTHER.md", "content": "not allowed"}),
		chatText("Asked first.", 30, 4),
	)
	f.write(t, "go.mod", "module example.com/x\n\ngo 1.26\n")
	tt := f.tmux(t)
	tt.waitFor("›")
	tt.text("/init")
	tt.keys("Enter")
	s := tt.waitFor("Wrote AGENTS.md.")
	if strings.Contains(s, "Allow") {
		t.Fatalf("/init asked before writing AGENTS.md:\n%s", s)
	}
	b, err := os.ReadFile(filepath.Join(f.dir, "AGENTS.md"))
	if err != nil || !strings.Contains(string(b), "Run go test") {
		t.Fatalf("AGENTS.md after /init: %q %v", b, err)
	}
	msgs, _ := json.Marshal(f.model.request(0)["messages"])
	if !strings.Contains(string(msgs), "Write or update AGENTS.md") {
		t.Fatalf("the first request does not carry the /init prompt:\n%s", msgs)
	}
	// The allowance is the command's, not the session's: a later prompt's
	// write asks.
	tt.text("now write OTHER.md")
	tt.keys("Enter")
	tt.waitFor("Allow Write OTHER.md?", "[n] deny")
	if _, err := os.Stat(filepath.Join(f.dir, "OTHER.md")); err == nil {
		t.Fatal("a write outside /init's allowed tools ran without asking")
	}
	tt.text("n")
	tt.waitFor("Why not?")
	tt.keys("Enter")
	tt.waitFor("Asked first.")
	if _, err := os.Stat(filepath.Join(f.dir, "OTHER.md")); err == nil {
		t.Fatal("a denied write ran")
	}
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}
