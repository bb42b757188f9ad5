package bashtool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
)

func TestToolsInfo(t *testing.T) {
	ts := Tools(&recorder{}, Options{})
	var names []string
	for _, tl := range ts {
		info := tl.Info()
		names = append(names, info.Name)
		if info.Kind != tool.KindExecute || len(info.Description) < 100 || strings.HasSuffix(info.Description, "\n") {
			t.Errorf("%s: kind %q, description %d chars", info.Name, info.Kind, len(info.Description))
		}
		if info.ReadOnly != (info.Name == NameOutput) {
			t.Errorf("%s: ReadOnly = %v", info.Name, info.ReadOnly)
		}
		if !json.Valid(info.Parameters) {
			t.Errorf("%s: parameters are not JSON", info.Name)
		}
	}
	if strings.Join(names, ",") != "bash,bash_output,bash_kill" {
		t.Errorf("tools %v, want bash, bash_output, bash_kill in order", names)
	}
	var schema struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(ts[0].Info().Parameters, &schema)
	if strings.Join(schema.Required, ",") != "command,description" {
		t.Errorf("bash requires %v", schema.Required)
	}
}

// The registry validates arguments against the schema before Run; the
// schema must reject what the reference's validation rejects.
func TestBashSchemaValidation(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal(bashSchema, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for args, valid := range map[string]bool{
		`{"command":"ls","description":"d"}`: true,
		`{"command":"ls","description":"d","timeoutMs":5,"workdir":"x","run_in_background":false,"env":{}}`: true,
		`{}`:                               false,
		`{"command":42,"description":"d"}`: false,
		`{"command":"x"}`:                  false,
		`{"command":"x","description":"d","timeoutMs":"soon"}`:        false,
		`{"command":"x","description":"d","timeoutMs":null}`:          false, // null is not "absent"
		`{"command":"x","description":"d","run_in_background":"yes"}`: false,
		`[]`: false,
	} {
		var inst any
		_ = json.Unmarshal([]byte(args), &inst)
		if err := r.Validate(inst); (err == nil) != valid {
			t.Errorf("%s: valid=%v, err=%v", args, valid, err)
		}
	}
}

func TestBashForeground(t *testing.T) {
	t.Parallel()
	k := newKit(t, local.Config{})
	h := newHost("agent-1", t.TempDir())
	for _, tc := range []struct {
		args obj
		want string
	}{
		{obj{"command": "echo hello", "description": "d"}, "hello\n"},
		{obj{"command": "true", "description": "d"}, "(no output)"},
		{obj{"command": "echo out; echo err >&2", "description": "d"}, "out\n[stderr]\nerr\n"},
		{obj{"command": "echo failing; exit 3", "description": "d"}, "failing\n[exit code: 3]"},
		{obj{"command": "sleep 60", "description": "d", "timeoutMs": 100}, "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]"},
	} {
		text, res, isErr := call(t, context.Background(), k.bash, h, tc.args)
		if text != tc.want || isErr {
			t.Errorf("%v: %q (isError %v), want %q", tc.args, text, isErr, tc.want)
		}
		var m runMeta
		if err := json.Unmarshal(res.Meta, &m); err != nil || m.Cwd != h.cwd {
			t.Errorf("%v: meta %s (%v)", tc.args, res.Meta, err)
		}
	}
	text, res, _ := call(t, context.Background(), k.bash, h, obj{"command": `trap "exit 0" TERM; sleep 60`, "description": "d", "timeoutMs": 100})
	if !strings.Contains(text, "[timed out after 100ms]") || strings.Contains(text, "[exit code:") {
		t.Errorf("trapped TERM: %q", text)
	}
	var m runMeta
	if json.Unmarshal(res.Meta, &m); !m.TimedOut || m.ExitCode == nil || *m.ExitCode != 0 || m.TimeoutMs != 100 {
		t.Errorf("trapped TERM meta: %s", res.Meta)
	}
}

func TestBashTruncationNamesSpillFile(t *testing.T) {
	t.Parallel()
	k := newKit(t, local.Config{MaxOutputBytes: 100})
	text, res := mustCall(t, k.bash, newHost("a", t.TempDir()),
		obj{"command": "for i in $(seq 1 100); do printf 'line-%04d\\n' $i; done", "description": "d"})
	var m runMeta
	if err := json.Unmarshal(res.Meta, &m); err != nil || m.StdoutSpill == "" || !m.Truncated {
		t.Fatalf("meta %s (%v)", res.Meta, err)
	}
	want := "line-0100\n[output truncated; full output: " + m.StdoutSpill + "]"
	if !strings.HasSuffix(text, want) || strings.Contains(text, "line-0001") {
		t.Errorf("text %q, want the tail and %q", text, want)
	}
	full, err := os.ReadFile(m.StdoutSpill)
	if err != nil || !strings.HasPrefix(string(full), "line-0001\n") {
		t.Errorf("spill file: %v", err)
	}
}

func TestBashErrors(t *testing.T) {
	t.Parallel()
	k := newKit(t, local.Config{})
	h := newHost("a", t.TempDir())
	for _, tc := range []struct {
		args obj
		want string
	}{
		{obj{"command": "  ", "description": "d"}, "Error: invalid command: expected a non-empty string"},
		{obj{"command": "x", "description": "   "}, "Error: invalid description: expected a non-empty string"},
		{obj{"command": "x", "description": "d", "timeoutMs": -1}, "Error: invalid timeoutMs: expected a positive number, got -1"},
		{obj{"command": "x", "description": "d", "timeoutMs": 0}, "Error: invalid timeoutMs: expected a positive number, got 0"},
	} {
		if text, _, isErr := call(t, context.Background(), k.bash, h, tc.args); text != tc.want || !isErr {
			t.Errorf("%v: %q, want %q", tc.args, text, tc.want)
		}
	}
	text, _, isErr := call(t, context.Background(), k.bash, h, obj{"command": "true", "description": "d", "workdir": "/nonexistent-dsh"})
	if !isErr || !strings.Contains(text, "no such file or directory") || !strings.Contains(text, "/nonexistent-dsh") {
		t.Errorf("bad workdir: %q", text)
	}
	if _, err := k.bash.Run(context.Background(), tool.Call{Name: NameBash, Raw: "{not json", Host: h}); err == nil || !strings.Contains(err.Error(), "invalid arguments for bash: arguments are not valid JSON") {
		t.Errorf("non-JSON arguments: %v", err)
	}
	if _, err := k.bash.Run(context.Background(), tool.Call{Name: NameBash, Args: []byte(`{"command":7}`), Host: h}); err == nil || !strings.Contains(err.Error(), `"command" must be a string`) {
		t.Errorf("a number for the command: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if text, _, isErr := call(t, ctx, k.bash, h, obj{"command": "sleep 60", "description": "d"}); !isErr || text != "Error: command aborted" {
		t.Errorf("cancelled: %q", text)
	}
	if text, _, isErr := call(t, ctx, k.bash, h, obj{"command": "true", "description": "d"}); !isErr || !strings.Contains(text, "aborted") {
		t.Errorf("pre-cancelled: %q", text)
	}
}

func TestBashWorkdirResolution(t *testing.T) {
	t.Parallel()
	k := newKit(t, local.Config{})
	tmp, _ := filepath.EvalSymlinks(os.TempDir())
	for _, tc := range []struct {
		cwd     string
		workdir any
		want    string
	}{
		{"/usr", "bin", "/usr/bin\n"},
		{"/", tmp, tmp + "\n"},
		{tmp, nil, tmp + "\n"},
		{"/usr", "", "/usr\n"},
		{"/usr", "../usr/./bin", "/usr/bin\n"},
	} {
		args := obj{"command": "pwd", "description": "d"}
		if tc.workdir != nil {
			args["workdir"] = tc.workdir
		}
		if text, _ := mustCall(t, k.bash, newHost("a", tc.cwd), args); text != tc.want {
			t.Errorf("cwd %s workdir %v: %q, want %q", tc.cwd, tc.workdir, text, tc.want)
		}
	}
	// Outside an agent the process's cwd is the base.
	wd, _ := os.Getwd()
	if text, _ := mustCall(t, k.bash, nil, obj{"command": "pwd", "description": "d"}); text != wd+"\n" {
		t.Errorf("no host: %q, want %q", text, wd)
	}
}

// recorder is an executor that records requests.
type recorder struct {
	runs, starts []bash.ExecRequest
}

func (r *recorder) Run(_ context.Context, req bash.ExecRequest) (bash.RunResult, error) {
	r.runs = append(r.runs, req)
	zero := 0
	return bash.RunResult{ExitCode: &zero}, nil
}

func (r *recorder) Start(_ context.Context, req bash.ExecRequest) (bash.Task, error) {
	r.starts = append(r.starts, req)
	return bash.Task{ID: "bash-1", Status: bash.StatusRunning}, nil
}

func (r *recorder) Read(context.Context, bash.Owner, bash.TaskID) (bash.TaskRead, error) {
	return bash.TaskRead{Stdout: "tail", Lossy: true, Task: bash.Task{Status: bash.StatusRunning}}, nil
}
func (r *recorder) Kill(context.Context, bash.Owner, bash.TaskID) (bool, error) { return true, nil }
func (r *recorder) List(context.Context, bash.Owner) []bash.Task                { return nil }
func (r *recorder) KillOwner(context.Context, bash.Owner) error                 { return nil }

// A model cannot choose a command's environment or input.
func TestBashForwardsNamedFieldsOnly(t *testing.T) {
	rec := &recorder{}
	ts := Tools(rec, Options{})
	h := newHost("agent-7", "/work")
	args := obj{"command": "echo hi", "description": "echo", "timeoutMs": 1500,
		"env": obj{"SECRET_TOKEN": "x"}, "stdin": "payload", "owner": "someone-else"}
	mustCall(t, ts[0], h, args)
	args["run_in_background"] = true
	mustCall(t, ts[0], h, args)
	if len(rec.runs) != 1 || len(rec.starts) != 1 {
		t.Fatalf("runs %d starts %d", len(rec.runs), len(rec.starts))
	}
	fg, bg := rec.runs[0], rec.starts[0]
	if fg.Env != nil || fg.Stdin != nil || fg.Owner != "" || fg.Command != "echo hi" || fg.Workdir != "/work" || fg.Timeout != 1500*time.Millisecond {
		t.Errorf("foreground request %+v", fg)
	}
	if bg.Env != nil || bg.Stdin != nil || bg.Owner != "agent-7" || bg.OnDone == nil || bg.Timeout != 0 {
		t.Errorf("background request %+v", bg)
	}
	_ = h.scope.Close()
}

func TestRenderResult(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		r    bash.RunResult
		want string
	}{
		{bash.RunResult{ExitCode: code(0), Stderr: bash.CollectedOutput{Text: "err\n"}}, "[stderr]\nerr\n"},
		{bash.RunResult{ExitCode: code(0), Stdout: bash.CollectedOutput{Text: "out"}, Stderr: bash.CollectedOutput{Text: "err"}}, "out\n[stderr]\nerr"},
		{bash.RunResult{ExitCode: code(7), Stdout: bash.CollectedOutput{Text: "x"}}, "x\n[exit code: 7]"},
		{bash.RunResult{Signal: "SIGKILL"}, "(no output)\n[killed by signal: SIGKILL]"},
		{bash.RunResult{ExitCode: code(0), TimedOut: true, Timeout: time.Second}, "(no output)\n[timed out after 1000ms]"},
		{bash.RunResult{ExitCode: code(0), Stdout: bash.CollectedOutput{Text: "tail", Truncated: true}}, "tail\n[output truncated; full output: (unavailable)]"},
		{bash.RunResult{ExitCode: code(2), Stdout: bash.CollectedOutput{Text: "tail\n", Truncated: true, SpillPath: "/s/out.log"}},
			"tail\n[output truncated; full output: /s/out.log]\n[exit code: 2]"},
		{bash.RunResult{ExitCode: code(0), Stdout: bash.CollectedOutput{Text: "hello\n"}}, "hello\n"},
	} {
		if got := renderResult(tc.r); got != tc.want {
			t.Errorf("renderResult(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestPresentCall(t *testing.T) {
	bt := Tools(&recorder{}, Options{})[0].(*bashTool)
	raw := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	v := bt.PresentCall(raw(obj{"command": "ls -la src", "description": "List files in src"}))
	if v == nil || v.Title != "ls -la src" || v.Command != "ls -la src" || v.Text != "List files in src" || v.Cwd != "" || v.Kind != tool.KindExecute {
		t.Errorf("foreground: %+v", v)
	}
	for workdir, want := range map[string]string{"/tmp/x": "/tmp/x", "sub": "sub"} {
		if v := bt.PresentCall(raw(obj{"command": "ls", "description": "d", "workdir": workdir})); v == nil || v.Cwd != want {
			t.Errorf("workdir %q: %+v", workdir, v)
		}
	}
	v = bt.PresentCall(raw(obj{"command": "sleep 100", "description": "wait", "run_in_background": true}))
	if v == nil || v.Title != "sleep 100" || v.Command != "" || v.Text != "wait" || v.Kind != tool.KindExecute {
		t.Errorf("background: %+v", v)
	}
	for _, bad := range []string{`{"command":"ls"}`, `{"command":5,"description":"d"}`, `not json`, `null`} {
		if v := bt.PresentCall(json.RawMessage(bad)); v != nil {
			t.Errorf("%s: %+v, want nil", bad, v)
		}
	}
	ts := Tools(&recorder{}, Options{})
	if v := ts[1].(tool.CallPresenter).PresentCall(raw(obj{"task_id": "bash-3"})); v == nil || v.Title != "Read output from background task bash-3" {
		t.Errorf("bash_output: %+v", v)
	}
	if v := ts[2].(tool.CallPresenter).PresentCall(raw(obj{"task_id": "bash-3"})); v == nil || v.Title != "Kill background task bash-3" {
		t.Errorf("bash_kill: %+v", v)
	}
}

func TestPresentResult(t *testing.T) {
	bt := Tools(&recorder{}, Options{})[0].(*bashTool)
	fg := json.RawMessage(`{"command":"make","description":"build","workdir":"sub"}`)
	bg := json.RawMessage(`{"command":"make","description":"build","run_in_background":true}`)
	text := func(s string) tool.Result { return tool.Result{Content: []llm.Block{llm.Text(s)}} }
	withMeta := func(r tool.Result, m string) tool.Result { r.Meta = json.RawMessage(m); return r }
	for _, tc := range []struct {
		name   string
		args   json.RawMessage
		res    tool.Result
		code   int // -1: no exit code
		signal string
		output string
		body   string
	}{
		{"clean", fg, text("hi\n[exit code: 0]\n\n"), 0, "", "hi\n[exit code: 0]\n\n", ""},
		{"failed", fg, text("oops\n[exit code: 3]"), 3, "", "oops\n", ""},
		{"failed with meta", fg, withMeta(text("oops\n[exit code: 3]"), `{"exitCode":3}`), 3, "", "oops\n", ""},
		{"signal", fg, text("gone\n[killed by signal: SIGKILL]"), -1, "SIGKILL", "gone\n", ""},
		{"marker without newline", fg, text("[exit code: 5]"), 0, "", "[exit code: 5]", ""},
		{"meta wins over spoofed text", fg, withMeta(text("x\n[exit code: 9]"), `{"exitCode":0}`), 0, "", "x\n[exit code: 9]", ""},
		{"meta signal", fg, withMeta(text("x"), `{"signal":"SIGTERM","timedOut":true}`), -1, "SIGTERM", "x", ""},
		{"background", bg, text("started background task bash-1\n"), -1, "", "", "```console\nstarted background task bash-1\n```"},
		{"error", fg, tool.Result{Content: []llm.Block{llm.Text("command aborted")}, IsError: true}, -1, "", "", "```console\ncommand aborted\n```"},
	} {
		v := bt.PresentResult(tc.args, tc.res)
		if v == nil {
			t.Errorf("%s: nil view", tc.name)
			continue
		}
		gotCode := -1
		if v.ExitCode != nil {
			gotCode = *v.ExitCode
		}
		if gotCode != tc.code || v.Output != tc.output || (tc.signal != "" && !strings.Contains(v.Text, tc.signal)) {
			t.Errorf("%s: %+v (exit %d)", tc.name, v, gotCode)
		}
		if tc.body != "" && v.Text != tc.body {
			t.Errorf("%s: body %q, want %q", tc.name, v.Text, tc.body)
		}
		if tc.output != "" && (v.Command != "make" || v.Cwd != "sub") {
			t.Errorf("%s: terminal view without command/cwd: %+v", tc.name, v)
		}
	}
	two := tool.Result{Content: []llm.Block{llm.Text("a"), llm.Text("b")}}
	if v := bt.PresentResult(fg, two); v != nil {
		t.Errorf("two blocks: %+v", v)
	}
	if v := bt.PresentResult(json.RawMessage(`{}`), text("x")); v != nil {
		t.Errorf("bad args: %+v", v)
	}
}

var startedRe = regexp.MustCompile(`^started background task (bash-\d+)$`)

// Through the real registry: schema validation, error conversion and the
// result text the model reads.
func TestThroughRegistry(t *testing.T) {
	t.Parallel()
	k := newKit(t, local.Config{})
	reg := tool.NewRegistry()
	for _, tl := range []tool.Tool{k.bash, k.output, k.kill} {
		if _, err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, s := range reg.Schemas(nil) {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "bash,bash_output,bash_kill" {
		t.Errorf("schemas %v", names)
	}
	h := newHost("a", t.TempDir())
	for _, tc := range []struct {
		name, raw string
		isErr     bool
		want      string // prefix
	}{
		{NameBash, `{"command":"echo hi","description":"greet"}`, false, "hi\n"},
		{NameBash, `{"command":"exit 2","description":"fail"}`, false, "(no output)\n[exit code: 2]"},
		{NameBash, `{}`, true, "Error: invalid arguments"},
		{NameBash, `{"command":"x","description":"d","timeoutMs":null}`, true, "Error: invalid arguments"},
		{NameBash, `{"command":`, true, "Error: invalid arguments"},
		{NameOutput, `{"task_id":9}`, true, "Error: invalid arguments"},
		{NameOutput, `{"task_id":"bash-999"}`, true, `Error: unknown bash task "bash-999"`},
	} {
		out := reg.Execute(context.Background(), tool.NewCall("c1", tc.name, tc.raw, h), tool.ExecOptions{})
		text := llm.TextOf(out.Result.Content)
		if out.Result.IsError != tc.isErr || !strings.HasPrefix(text, tc.want) {
			t.Errorf("%s %s: %q (isError %v)", tc.name, tc.raw, text, out.Result.IsError)
		}
	}
}

func TestBinaryOutputIsSummarised(t *testing.T) {
	code := func(n int) *int { return &n }
	r := bash.RunResult{ExitCode: code(0), Stdout: bash.CollectedOutput{Binary: true, Size: 15632, SpillPath: "/s/out.log"}}
	if got := renderResult(r); got != "[binary output, 15,632 bytes, saved to /s/out.log]" {
		t.Fatalf("%q", got)
	}
	r.Stdout.SpillPath = ""
	if got := renderResult(r); !strings.Contains(got, "15,632 bytes, not shown") {
		t.Fatalf("%q", got)
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q", n, got)
		}
	}
	read := bash.TaskRead{Stdout: "", StdoutBinary: 2048, StdoutSpill: "/s/t.log", Task: bash.Task{Status: bash.StatusRunning}}
	if got := renderRead(read); !strings.HasPrefix(got, "[binary output, 2,048 bytes, saved to /s/t.log]") {
		t.Fatalf("%q", got)
	}
}
