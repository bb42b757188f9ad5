package serve_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/fakeanthropic"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
)

// TestServeRewind drives POST and GET /v1/sessions/{id}/rewind through a
// real dsh serve, every response checked against the OpenAPI document:
// the points list each turn's prompt and file changes; a file the user
// changed after the agent's checkpoint refuses a code rewind (409 with
// the conflict and its diff) and is left alone by skipConflicts; a dry
// run changes nothing; a conversation rewind makes the next request carry
// only the history before the turn.
func TestServeRewind(t *testing.T) {
	e := dshtest.New(t, "..", rewindReply)
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	mkdirs(t, proj)
	keep, made := filepath.Join(proj, "keep.txt"), filepath.Join(proj, "made.txt")
	if err := os.WriteFile(keep, []byte("the original\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	admin := token(t, e, "admin")
	viewer := token(t, e, "viewer", "--read-only")
	p := startServe(t, e, nil, "--root", root)
	ct := newContract(t, p.URL)
	ctx := context.Background()
	c := client.New(p.URL, admin)
	c.HTTP = ct.client()
	vc := client.New(p.URL, viewer)
	vc.HTTP = ct.client()

	s, err := c.CreateSession(ctx, api.CreateSession{Workspace: proj, PermissionMode: "bypassPermissions", Prompt: "say hello"})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(text string) {
		t.Helper()
		acc, err := c.Send(ctx, s.ID, text)
		if err != nil {
			t.Fatal(err)
		}
		collectTurn(t, c, s.ID, acc.Seq)
	}
	collectTurn(t, c, s.ID, 0)
	turn("write " + made)
	turn("shell sed -i 's/the original/changed by sed/' " + keep)
	if b, _ := os.ReadFile(keep); string(b) != "changed by sed\n" {
		t.Fatalf("turn 3 did not change keep.txt: %q", b)
	}

	// The points, read with a read-only token.
	pts, err := vc.RewindPoints(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts.Points) != 3 {
		t.Fatalf("points %+v, want 3", pts.Points)
	}
	want := []struct {
		prompt, summary, path, op string
	}{{"say hello", "no file changes", "", ""}, {"write " + made, "1 created", "made.txt", "created"}, {"shell sed -i 's/the original/changed by sed/' " + keep, "1 modified", "keep.txt", "modified"}}
	for i, w := range want {
		pt := pts.Points[i]
		if pt.Turn != i+1 || pt.Prompt != w.prompt || !pt.Code || pt.Summary != w.summary {
			t.Fatalf("point %d: %+v, want %+v", i, pt, w)
		}
		if w.path == "" {
			if len(pt.Changes) != 0 {
				t.Fatalf("point %d changed %+v", i, pt.Changes)
			}
			continue
		}
		if len(pt.Changes) != 1 || !strings.HasSuffix(pt.Changes[0].Path, w.path) || pt.Changes[0].Op != w.op {
			t.Fatalf("point %d changes %+v, want %s %s", i, pt.Changes, w.op, w.path)
		}
	}
	if _, err := vc.Rewind(ctx, s.ID, api.Rewind{To: "2"}); client.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("a read-only token rewound: %v", err)
	}

	// Bad requests.
	for _, bad := range []api.Rewind{{}, {To: "0"}, {To: "two"}, {To: "9"}, {To: "2", Scope: "sideways"}, {To: "2", Force: true, SkipConflicts: true}} {
		if _, err := c.Rewind(ctx, s.ID, bad); client.StatusOf(err) != http.StatusBadRequest {
			t.Fatalf("rewind %+v: %v, want 400", bad, err)
		}
	}

	// The user changes made.txt: a code rewind to before turn 2 refuses,
	// shows the conflict, and changes nothing.
	if err := os.WriteFile(made, []byte("the user's own words\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := c.Rewind(ctx, s.ID, api.Rewind{To: "2", Scope: api.RewindCode})
	if client.StatusOf(err) != http.StatusConflict || res.Refused != "conflicts" || res.Done {
		t.Fatalf("rewind over the user's change: %v %+v", err, res)
	}
	if len(res.Conflicts) != 1 || !strings.HasSuffix(res.Conflicts[0].Path, "made.txt") || !strings.Contains(res.Conflicts[0].Diff, "+the user's own words") {
		t.Fatalf("conflicts %+v", res.Conflicts)
	}
	if b, _ := os.ReadFile(keep); string(b) != "changed by sed\n" {
		t.Fatalf("a refused rewind changed keep.txt: %q", b)
	}

	// A dry run shows the diff and changes nothing.
	res, err = c.Rewind(ctx, s.ID, api.Rewind{To: "2", Scope: api.RewindCode, DryRun: true})
	if err != nil || res.Done || !res.DryRun || !strings.Contains(res.Diff, "+the original") || len(res.Files) != 2 {
		t.Fatalf("dry run: %v %+v", err, res)
	}
	if b, _ := os.ReadFile(keep); string(b) != "changed by sed\n" {
		t.Fatalf("a dry run changed keep.txt: %q", b)
	}

	// skipConflicts restores keep.txt (bytes and mode) and leaves made.txt.
	res, err = c.Rewind(ctx, s.ID, api.Rewind{To: "2", Scope: api.RewindCode, SkipConflicts: true})
	if err != nil || !res.Done {
		t.Fatalf("rewind: %v %+v", err, res)
	}
	states := map[string]string{}
	for _, f := range res.Files {
		states[filepath.Base(f.Path)] = f.Action + "/" + f.State
	}
	if states["keep.txt"] != "revert/" || states["made.txt"] != "remove/left" {
		t.Fatalf("files %+v", res.Files)
	}
	if b, _ := os.ReadFile(keep); string(b) != "the original\n" {
		t.Fatalf("keep.txt after the rewind: %q", b)
	}
	if fi, _ := os.Stat(keep); fi.Mode().Perm() != 0o640 {
		t.Fatalf("keep.txt mode %v", fi.Mode())
	}
	if b, _ := os.ReadFile(made); string(b) != "the user's own words\n" {
		t.Fatalf("made.txt was not left alone: %q", b)
	}

	// The conversation back to before turn 2: the next request carries
	// turn 1 and the new prompt only.
	res, err = c.Rewind(ctx, s.ID, api.Rewind{To: "2", Scope: api.RewindChat})
	if err != nil || !res.Done || res.Hidden == 0 {
		t.Fatalf("chat rewind: %v %+v", err, res)
	}
	turn("and now something else")
	reqs := e.Model.Requests()
	last := reqs[len(reqs)-1]
	var users []string
	for _, m := range last.Messages {
		if m.Role == "user" {
			for _, b := range m.Content {
				if b.Type == "text" && !strings.HasPrefix(b.Text, "<") {
					users = append(users, b.Text)
				}
			}
		}
	}
	if all := last.Text(); strings.Contains(all, made) || strings.Contains(all, "write ") || len(users) != 2 || users[0] != "say hello" || users[1] != "and now something else" {
		t.Fatalf("after the conversation rewind the model was sent %q", users)
	}
}

// rewindReply is reply with one more verb: "shell CMD" runs CMD with
// bash, a change no edit tool sees.
func rewindReply(req fakeanthropic.Request) fakeanthropic.Reply {
	last := req.Messages[len(req.Messages)-1]
	if _, cmd, ok := strings.Cut(req.LastUserText(), "shell "); ok && !slices.ContainsFunc(last.Content, func(b fakeanthropic.Block) bool { return b.Type == "tool_result" }) {
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_shell", Name: "bash",
			Input: map[string]string{"command": cmd, "description": "change a file"}}}}
	}
	return reply(req)
}
