package headless_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/fakeanthropic"
)

// The Claude Agent SDK's file checkpoints against dsh: with
// enableFileCheckpointing and replayed user messages, Query.rewindFiles
// takes the files back to before a user message's turn — a write and a
// `sed -i` in bash alike. A dry run reports the files and line counts and
// changes nothing; a file the user changed since the agent's checkpoint
// refuses the rewind, naming it; an unknown id refuses; a uuid the client
// sent with its message names that message; and a resumed process
// rewinds by the replayed uuid.
func TestSDKRewindFiles(t *testing.T) {
	var e *env
	e = newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
		last := req.Messages[len(req.Messages)-1]
		if slices.ContainsFunc(last.Content, func(b fakeanthropic.Block) bool { return b.Type == "tool_result" }) {
			return fakeanthropic.Reply{Text: "done"}
		}
		switch text := req.LastUserText(); {
		case strings.Contains(text, "make a file"):
			return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_w", Name: "write",
				Input: map[string]string{"file_path": filepath.Join(e.dir, "made.txt"), "content": "made by the agent\n"}}}}
		case strings.Contains(text, "edit keep"):
			return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_b", Name: "bash",
				Input: map[string]string{"command": "sed -i s/original/changed/ keep.txt", "description": "edit"}}}}
		}
		return fakeanthropic.Reply{Text: "ok"}
	})
	keep, made := filepath.Join(e.dir, "keep.txt"), filepath.Join(e.dir, "made.txt")
	if err := os.WriteFile(keep, []byte("the original\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	rep := e.node(sdkScript, "rewind")
	replays := msgs(rep, "replays")
	if len(replays) != 2 || replays[1]["uuid"] != "11111111-2222-4333-8444-555555555555" || !strings.Contains(replays[0]["text"].(string), "make a file") {
		t.Fatalf("replayed user messages %v", replays)
	}
	calls := rep["calls"].(map[string]any)
	call := func(name string) map[string]any { return calls[name].(map[string]any) }
	files := func(c map[string]any) []string {
		var out []string
		for _, f := range c["filesChanged"].([]any) {
			out = append(out, filepath.Base(f.(string)))
		}
		slices.Sort(out)
		return out
	}
	if calls["keepAfter"] != "the changed\n" {
		t.Fatalf("the agent's sed: keep.txt %q; tool results %v", calls["keepAfter"], blocks(ofType(msgs(rep, "messages"), "user")))
	}
	dry := call("dry")
	if dry["canRewind"] != true || !slices.Equal(files(dry), []string{"keep.txt", "made.txt"}) || dry["insertions"] != float64(1) || dry["deletions"] != float64(2) {
		t.Fatalf("dry run %v", dry)
	}
	if c := call("client"); c["canRewind"] != true || !slices.Equal(files(c), []string{"keep.txt"}) {
		t.Fatalf("by the client's uuid %v", c)
	}
	if c := call("unknown"); c["canRewind"] != false || !strings.Contains(c["error"].(string), "no user message") {
		t.Fatalf("an unknown id %v", c)
	}
	if c := call("refused"); c["canRewind"] != false || !strings.Contains(c["error"].(string), "made.txt") || !strings.Contains(c["error"].(string), "changed by someone other than the agent") {
		t.Fatalf("over the user's edit %v", c)
	}
	res := call("resumed")
	if res["canRewind"] != true || !slices.Equal(files(res), []string{"keep.txt", "made.txt"}) {
		t.Fatalf("resumed rewind %v\n%v", res, rep["stderr"])
	}
	if b, _ := os.ReadFile(keep); string(b) != "the original\n" {
		t.Fatalf("keep.txt %q", b)
	}
	if fi, _ := os.Stat(keep); fi.Mode().Perm() != 0o640 {
		t.Fatalf("keep.txt mode %v", fi.Mode())
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Fatalf("made.txt is still there: %v", err)
	}
}
