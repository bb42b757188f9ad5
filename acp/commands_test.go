package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/acp"
	"github.com/dshq/dsh/acp/acptest"
)

// Custom slash commands are advertised to the client with their
// descriptions and hints, and a prompt naming one runs its expansion.
func TestCustomCommandsOverACP(t *testing.T) {
	model := acptest.New(acptest.Text("Hello, Ada."))
	home := t.TempDir()
	h := newHarness(t, model, func(o *acp.Options) { o.UserHome = home })
	defer h.close()
	cmd := "---\ndescription: Greet someone warmly\nargument-hint: <name>\n---\nSay hello to $1, who is $ARGUMENTS.\n"
	p := filepath.Join(home, ".claude", "commands", "greet.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(cmd), 0o644); err != nil {
		t.Fatal(err)
	}
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	var advertised []sdk.AvailableCommand
	h.client.waitFor(t, id, func(u sdk.SessionUpdate) bool {
		if u.AvailableCommandsUpdate != nil {
			advertised = u.AvailableCommandsUpdate.AvailableCommands
			return true
		}
		return false
	})
	i := slices.IndexFunc(advertised, func(c sdk.AvailableCommand) bool { return c.Name == "greet" })
	if i < 0 || advertised[0].Name != "compact" {
		t.Fatalf("advertised %+v", advertised)
	}
	g := advertised[i]
	if g.Description != "Greet someone warmly" || g.Input == nil || g.Input.Unstructured == nil || g.Input.Unstructured.Hint != "<name>" {
		t.Fatalf("greet advertised as %+v", g)
	}
	if !slices.ContainsFunc(advertised, func(c sdk.AvailableCommand) bool { return c.Name == "init" }) {
		t.Fatal("the built-in /init is not advertised")
	}
	h.mustPrompt(id, "/greet Ada Lovelace", sdk.StopReasonEndTurn)
	reqs := model.Requests()
	b, _ := json.Marshal(reqs[len(reqs)-1]["messages"])
	if !strings.Contains(string(b), "Say hello to Ada, who is Ada Lovelace.") {
		t.Fatalf("the model got %s", b)
	}
}
