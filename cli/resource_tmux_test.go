package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// MCP resources at @ through the real binary: a server on the npm MCP SDK
// (../mcp/testdata/resources.mjs) lists resources over several pages; @
// suggests them as @server:uri beside the directory's files, tab takes
// one, and the resource's text reaches the model's request as an
// attachment. A second server whose resources/list fails is said in the
// transcript, and the files are still suggested.
func TestMCPResourceMentionInTmux(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	srv, err := filepath.Abs(filepath.Join("..", "mcp", "testdata", "resources.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("..", "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skip("the npm MCP SDK is not installed (run npm ci)")
	}
	f := newTermFixture(t, "", chatText("Summarised.", 10, 1))
	f.addSettings(t, fmt.Sprintf(`"mcpServers":{"notes":{"command":"node","args":[%q,"pages"]},"broken":{"command":"node","args":[%q,"failing"]}}`, srv, srv))
	f.write(t, "release.md", "# Release\n")

	tt := f.tmux(t, "--trust")
	tt.waitFor("local/m", "›")
	tt.text("summarise @")
	// The resources show once their server is connected and listed: all
	// five, over three pages of resources/list, beside the file.
	s := tt.waitFor("notes:db://users/42", "notes:bin://firmware.bin", "notes:notes://release/plan", "release.md")
	tt.waitFor(`server "broken": listing resources`, "corrupt")
	if strings.Contains(s, "broken:") {
		t.Fatalf("the failing server's resources are suggested:\n%s", s)
	}
	tt.text("relea")
	tt.waitFor("› release.md  (tab)", "notes:notes://release/plan  Release plan")
	tt.text("se-pl")
	tt.waitFor("› notes:notes://release/plan  (tab)")
	tt.keys("Tab")
	tt.waitUntil(func(s string) bool {
		return strings.Contains(lastLines(s, 3), "› summarise @notes:notes://release/plan ")
	}, "the completed resource mention")
	tt.keys("Enter")
	s = tt.waitFor("Summarised.")
	if !strings.Contains(s, "attached @notes:notes://release/plan (2 lines)") {
		t.Fatalf("no attachment note:\n%s", s)
	}
	if strings.Contains(s, "kumquat") {
		t.Fatalf("the transcript shows the resource's content:\n%s", s)
	}
	msgs := f.model.lastMessages()
	if !strings.Contains(msgs, "ship the kumquat build on Friday") || !strings.Contains(msgs, "MCP resource notes://release/plan of the server notes") {
		t.Fatalf("the resource's text is not in the request: %.800s", msgs)
	}
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}
