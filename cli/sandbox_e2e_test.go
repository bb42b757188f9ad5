package cli_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHeadlessSandboxedCommandsDoNotAsk: in default permission mode with no
// rule, the everyday commands that used to ask run without asking when the
// sandbox enforces — and still ask when it does not (a layer switched off).
func TestHeadlessSandboxedCommandsDoNotAsk(t *testing.T) {
	commands := []string{"cat README.md", "git status --short", "ls -la", "go test ./..."}
	for _, enforcing := range []bool{true, false} {
		name := "enforcing"
		if !enforcing {
			name = "not-enforcing"
			t.Setenv("DSH_SANDBOX_DISABLE", "landlock")
		}
		t.Run(name, func(t *testing.T) {
			dir, home := t.TempDir(), t.TempDir()
			must := func(err error) {
				if err != nil {
					t.Fatal(err)
				}
			}
			must(os.WriteFile(dir+"/README.md", []byte("readme-marker\n"), 0o644))
			must(os.WriteFile(dir+"/go.mod", []byte("module m\n\ngo 1.22\n"), 0o644))
			git := exec.Command("git", "init", "-q")
			git.Dir = dir
			must(git.Run())
			var replies []string
			for i, c := range commands {
				replies = append(replies, toolReply("call_"+string(rune('a'+i)), "bash", map[string]string{"command": c, "description": "look"}))
			}
			ds := &deepseek{replies: append(replies, textReply("done"))}
			srv := httptest.NewServer(ds)
			defer srv.Close()
			r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "look around")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			ds.mu.Lock()
			msgs, _ := json.Marshal(ds.requests[len(ds.requests)-1]["messages"])
			ds.mu.Unlock()
			asked := strings.Count(string(msgs), "no approver is attached")
			if enforcing && (asked != 0 || !strings.Contains(string(msgs), "readme-marker")) {
				t.Fatalf("%d commands asked in an enforcing sandbox: %s", asked, msgs)
			}
			if !enforcing && asked != len(commands) {
				t.Fatalf("%d of %d commands asked without enforcement: %s", asked, len(commands), msgs)
			}
		})
	}
}
