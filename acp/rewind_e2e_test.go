package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dshq/dsh/acp/acptest"
)

// /rewind through the reference ACP client against the real binary: it
// is advertised with its hint; without a turn it lists the turns with
// their prompts and file changes; a code rewind over a file the user
// changed since the agent's checkpoint shows the conflict on a card and
// asks (the editor's answer "rewind the others" restores the rest and
// leaves that file); a conversation rewind makes the next request carry
// only the history before the turn.
func TestNodeClientRewind(t *testing.T) {
	needNode(t)
	model := acptest.New(
		writeCall("call_1", "made.txt", "made by the agent\n"), acptest.Text("made it"),
		acptest.Tool("call_2", "bash", map[string]any{"command": "sed -i s/original/changed/ keep.txt", "description": "edit keep.txt"}), acptest.Text("edited"),
	)
	defer model.Close()
	e := newE2E(t, model)
	keep, made := filepath.Join(e.dir, "keep.txt"), filepath.Join(e.dir, "made.txt")
	if err := os.WriteFile(keep, []byte("the original\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	out := e.prompts("", []string{"make a file", "edit keep"}, []string{"allow_once", "allow_once"}, nil)
	id := out["sessionId"].(string)
	if b, _ := os.ReadFile(keep); string(b) != "the changed\n" {
		t.Fatalf("the agent's sed: %q (%v)", b, out["permissionRequests"])
	}
	cmds := out["commands"].([]any)
	i := slices.IndexFunc(cmds, func(c any) bool { return c.(map[string]any)["name"] == "rewind" })
	if i < 0 || !strings.HasPrefix(cmds[i].(map[string]any)["hint"].(string), "TURN") {
		t.Fatalf("/rewind is not advertised: %v", cmds)
	}

	// The user edits the file the agent made.
	if err := os.WriteFile(made, []byte("the user's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model.Push(acptest.Text("fresh start"))
	out = e.prompts(id, []string{"/rewind", "/rewind 1 code", "/rewind 1 chat", "what now?"}, []string{"rewind_skip"}, nil)
	said := strs(out["said"])
	if !slices.Equal(strs(out["stops"]), []string{"end_turn", "end_turn", "end_turn", "end_turn"}) {
		t.Fatalf("stops %v, said %q", out["stops"], said)
	}
	if !strings.Contains(said[0], "1. make a file — 1 created") || !strings.Contains(said[0], "2. edit keep — 1 modified") || !strings.Contains(said[0], "/rewind TURN") {
		t.Fatalf("/rewind listed %q", said[0])
	}
	reqs := out["permissionRequests"].([]any)
	if len(reqs) != 1 {
		t.Fatalf("permission requests %v", reqs)
	}
	q := reqs[0].(map[string]any)
	if !slices.Equal(strs(q["optionIds"]), []string{"rewind_overwrite", "rewind_skip", "rewind_cancel"}) ||
		!strings.Contains(q["text"].(string), "made.txt") || !strings.Contains(q["text"].(string), "+the user's edit") ||
		!strings.Contains(q["title"].(string), "before turn 1") {
		t.Fatalf("the conflict question %v", q)
	}
	if !strings.Contains(said[1], "rewound code to before turn 1") || !strings.Contains(said[1], "left alone") {
		t.Fatalf("/rewind 1 code said %q", said[1])
	}
	if b, _ := os.ReadFile(keep); string(b) != "the original\n" {
		t.Fatalf("keep.txt after the rewind: %q", b)
	}
	if fi, _ := os.Stat(keep); fi.Mode().Perm() != 0o640 {
		t.Fatalf("keep.txt mode %v", fi.Mode())
	}
	if b, _ := os.ReadFile(made); string(b) != "the user's edit\n" {
		t.Fatalf("the user's file was not left alone: %q", b)
	}
	if !strings.Contains(said[2], "rewound conversation to before turn 1") || !strings.Contains(said[2], "hidden from the model") {
		t.Fatalf("/rewind 1 chat said %q", said[2])
	}
	all := model.Requests()
	b, _ := json.Marshal(all[len(all)-1]["messages"])
	if !strings.Contains(string(b), "what now?") || strings.Contains(string(b), "make a file") || strings.Contains(string(b), "edit keep") {
		t.Fatalf("after the conversation rewind the model got %s", b)
	}
}
