package claudemsg_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dshq/dsh/bash/local"
	fslocal "github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/bashtool"
	"github.com/dshq/dsh/tools/fstool"
	"github.com/dshq/dsh/tools/searchtool"
)

type host struct {
	cwd   string
	scope *kernel.Scope
}

func (h *host) AgentID() string                                       { return "agent-1" }
func (h *host) SessionID() string                                     { return "s1" }
func (h *host) Cwd() string                                           { return h.cwd }
func (h *host) Append(context.Context, string, any) error             { return nil }
func (h *host) Inject(context.Context, []llm.Block, llm.Source) error { return nil }
func (h *host) Scope() *kernel.Scope                                  { return h.scope }

// tools runs the real bash, file and search tools in a temp dir.
type tools struct {
	t   *testing.T
	dir string
	reg *tool.Registry
	h   *host
}

func newTools(t *testing.T) *tools {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	exec, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	fsp, err := fslocal.New(fslocal.Options{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	scope := kernel.NewScope("test")
	t.Cleanup(func() { scope.Close() })
	var all []tool.Tool
	all = append(all, bashtool.Tools(exec, bashtool.Options{})...)
	all = append(all, fstool.Tools(fsp, nil, fstool.Options{})...)
	all = append(all, searchtool.Tools(searchtool.Options{})...)
	if err := reg.RegisterAll(scope, all...); err != nil {
		t.Fatal(err)
	}
	return &tools{t: t, dir: dir, reg: reg, h: &host{cwd: dir, scope: kernel.NewScope("agent")}}
}

// run executes one call and returns Claude Code's view of it.
func (x *tools) run(name string, args any) (claudemsg.Call, claudemsg.Outcome) {
	x.t.Helper()
	raw, _ := json.Marshal(args)
	out := x.reg.Execute(context.Background(), tool.NewCall("c1", name, string(raw), x.h), tool.ExecOptions{})
	return claudemsg.Call{Name: name, Args: raw, Cwd: x.dir}, claudemsg.Outcome{Content: out.Result.Content, Meta: out.Result.Meta, IsError: out.Result.IsError}
}

func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// The bash tool's rendered text splits back into the streams Claude Code
// reports, whatever the outcome.
func TestBashResponseFromTheRealTool(t *testing.T) {
	x := newTools(t)
	cases := []struct {
		cmd                string
		stdout, stderr     string
		interrupted, fails bool
		failText           string
	}{
		{cmd: "echo out", stdout: "out\n"},
		{cmd: "echo err >&2", stderr: "err\n"},
		{cmd: "echo out; echo err >&2", stdout: "out\n", stderr: "err\n"},
		{cmd: "printf 'no newline'; echo e >&2", stdout: "no newline\n", stderr: "e\n"},
		{cmd: "true"},
		{cmd: "echo partial; exit 3", stdout: "partial\n", fails: true, failText: "Exit code 3\npartial"},
		{cmd: "exit 4", fails: true, failText: "Exit code 4"},
		{cmd: "echo '[exit code: 9]'", stdout: "[exit code: 9]\n"},
		{cmd: "kill -TERM $$", interrupted: true, fails: true, failText: "Killed by signal SIGTERM"},
	}
	for _, c := range cases {
		call, out := x.run("bash", map[string]any{"command": c.cmd, "description": "t"})
		got := asJSON(t, claudemsg.ToolResponse(call, out))
		want := map[string]any{"stdout": c.stdout, "stderr": c.stderr, "interrupted": c.interrupted, "isImage": false}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%q: response (-want +got):\n%s\ntext %q", c.cmd, d, llm.TextOf(out.Content))
		}
		failed, msg := claudemsg.Failure(call, out)
		if failed != c.fails || msg != c.failText {
			t.Errorf("%q: failure = %v %q, want %v %q", c.cmd, failed, msg, c.fails, c.failText)
		}
	}
	call, out := x.run("bash", map[string]any{"command": "sleep 5", "description": "t", "timeoutMs": 200})
	got := asJSON(t, claudemsg.ToolResponse(call, out))
	if got["interrupted"] != true || got["stdout"] != "" {
		t.Errorf("timeout: %v", got)
	}
	if failed, msg := claudemsg.Failure(call, out); !failed || !strings.HasPrefix(msg, "Command timed out after 200ms") {
		t.Errorf("timeout failure: %v %q", failed, msg)
	}
}

// Read, Write, Edit, Glob and Grep report absolute paths and Claude Code's
// fields, from the real tools' results.
func TestFileAndSearchResponses(t *testing.T) {
	x := newTools(t)
	abs := filepath.Join(x.dir, "src", "a.txt")
	call, out := x.run("write", map[string]any{"file_path": "src/a.txt", "content": "one\ntwo\nthree\n"})
	got := asJSON(t, claudemsg.ToolResponse(call, out))
	if got["filePath"] != abs || got["type"] != "create" || got["content"] != "one\ntwo\nthree\n" || got["success"] != true {
		t.Fatalf("write: %v", got)
	}
	call, out = x.run("read", map[string]any{"file_path": "src/a.txt", "offset": 2})
	got = asJSON(t, claudemsg.ToolResponse(call, out))
	want := map[string]any{"type": "text", "file": map[string]any{"filePath": abs, "content": "two\nthree", "numLines": 2.0, "startLine": 2.0, "totalLines": 3.0}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("read (-want +got):\n%s", d)
	}
	call, out = x.run("edit", map[string]any{"file_path": abs, "old_string": "two", "new_string": "TWO"})
	got = asJSON(t, claudemsg.ToolResponse(call, out))
	patch, _ := json.Marshal(got["structuredPatch"])
	if got["filePath"] != abs || got["oldString"] != "two" || got["newString"] != "TWO" || got["replaceAll"] != false ||
		!strings.Contains(string(patch), `"-two","+TWO"`) || !strings.Contains(string(patch), `"oldStart":1`) {
		t.Errorf("edit: %v", got)
	}
	call, out = x.run("write", map[string]any{"file_path": abs, "content": "new\n"})
	if got := asJSON(t, claudemsg.ToolResponse(call, out)); got["type"] != "update" {
		t.Errorf("overwrite: %v", got)
	}
	os.WriteFile(filepath.Join(x.dir, "src", "b.go"), []byte("package b // needle\n"), 0o644)
	call, out = x.run("glob", map[string]any{"pattern": "**/*.go"})
	got = asJSON(t, claudemsg.ToolResponse(call, out))
	if d := cmp.Diff([]any{filepath.Join(x.dir, "src", "b.go")}, got["filenames"]); d != "" || got["numFiles"] != 1.0 || got["truncated"] != false {
		t.Errorf("glob: %v %s", got, d)
	}
	call, out = x.run("grep", map[string]any{"pattern": "needle"})
	got = asJSON(t, claudemsg.ToolResponse(call, out))
	if d := cmp.Diff(map[string]any{"mode": "files_with_matches", "numFiles": 1.0, "filenames": []any{filepath.Join(x.dir, "src", "b.go")}}, got); d != "" {
		t.Errorf("grep files (-want +got):\n%s", d)
	}
	call, out = x.run("grep", map[string]any{"pattern": "needle", "output_mode": "content"})
	got = asJSON(t, claudemsg.ToolResponse(call, out))
	if got["mode"] != "content" || !strings.Contains(got["content"].(string), "package b // needle") || got["numLines"] != 1.0 {
		t.Errorf("grep content: %v", got)
	}
	call, out = x.run("grep", map[string]any{"pattern": "needle", "output_mode": "count"})
	got = asJSON(t, claudemsg.ToolResponse(call, out))
	if got["mode"] != "count" || got["numMatches"] != 1.0 || got["numFiles"] != 1.0 {
		t.Errorf("grep count: %v", got)
	}
	call, out = x.run("read", map[string]any{"file_path": "missing.txt"})
	if failed, msg := claudemsg.Failure(call, out); !failed || !strings.Contains(msg, "missing.txt") || strings.HasPrefix(msg, "Error: ") {
		t.Errorf("failed read: %v %q", failed, msg)
	}
}
