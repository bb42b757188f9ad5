package mcp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/tool"
)

func startReady(t *testing.T, r *rig, cfgs ...mcp.ServerConfig) {
	t.Helper()
	if err := r.m.Start(context.Background(), cfgs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs {
		if st, _ := r.m.Server(c.Name); st.State != mcp.StateConnected {
			t.Fatalf("%s: state %s: %s", c.Name, st.State, st.Error)
		}
	}
}

// server-everything over stdio: tools, instructions, a scripted turn,
// image content.
func TestEverythingServer(t *testing.T) {
	cfg := everything(t, "everything")
	cfg.Env = map[string]string{"DSH_CFG_VAR": "${DSH_UNSET_VAR:-fallback}"}
	r := newRig(t, mcp.Options{Environ: append(os.Environ(), "DSH_BASE_VAR=base", "DSH_PROVIDER_KEY=sk-withheld"), Withhold: []string{"DSH_PROVIDER_KEY"}},
		scripted.Calls("",
			scripted.ToolCall{ID: "c1", Name: "mcp__everything__echo", Args: map[string]string{"message": "hi there"}},
			scripted.ToolCall{ID: "c2", Name: "mcp__everything__get-sum", Args: map[string]int{"a": 19, "b": 23}},
			scripted.ToolCall{ID: "c3", Name: "mcp__everything__get-tiny-image", Args: map[string]any{}},
			scripted.ToolCall{ID: "c4", Name: "mcp__everything__get-resource-links", Args: map[string]int{"count": 2}},
			scripted.ToolCall{ID: "c5", Name: "mcp__everything__get-structured-content", Args: map[string]string{"location": "Chicago"}},
			scripted.ToolCall{ID: "c6", Name: "mcp__everything__get-resource-reference", Args: map[string]any{"resourceType": "Text", "resourceId": 3}},
			scripted.ToolCall{ID: "c7", Name: "mcp__everything__get-env", Args: map[string]any{}}),
		scripted.Text("done"))
	startReady(t, r, cfg)
	names := toolNames(r.h.Tools, "mcp__everything__")
	for _, want := range []string{"mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__get-tiny-image", "mcp__everything__trigger-long-running-operation"} {
		if !has(names, want) {
			t.Fatalf("missing %s in %v", want, names)
		}
	}
	echo, _ := r.h.Tools.Get("mcp__everything__echo")
	if info := echo.Info(); !info.ReadOnly || info.Kind != "other" {
		t.Errorf("echo info %+v", info)
	}
	for _, n := range names {
		tl, _ := r.h.Tools.Get(n)
		validSchema(t, tl.Info().Parameters)
	}
	if tl, _ := r.h.Tools.Get("mcp__everything__toggle-simulated-logging"); tl == nil || tl.Info().ReadOnly {
		t.Error("toggle-simulated-logging has readOnlyHint false")
	}
	a := r.agent(agent.Options{})
	r.run(a, "try them")
	res := results(t, a.Session())
	if got := llm.TextOf(res["c1"].Content); got != "Echo: hi there" {
		t.Errorf("echo = %q", got)
	}
	if got := llm.TextOf(res["c2"].Content); !strings.Contains(got, "42") {
		t.Errorf("get-sum = %q", got)
	}
	var img *llm.Block
	for _, b := range res["c3"].Content {
		if b.Type == llm.BlockImage {
			img = &b
		}
	}
	if img == nil || !strings.HasPrefix(img.URL, "data:image/png;base64,iVBOR") || img.MimeType != "image/png" {
		t.Errorf("tiny image = %+v", res["c3"].Content)
	}
	if got := llm.TextOf(res["c4"].Content); !strings.Contains(got, "[resource: demo://resource/dynamic/") {
		t.Errorf("resource links = %q", got)
	}
	if got := llm.TextOf(res["c5"].Content); !strings.Contains(got, `"conditions"`) {
		t.Errorf("structured = %q", got)
	}
	if got := llm.TextOf(res["c6"].Content); !strings.Contains(got, "[resource: demo://resource/dynamic/text/3]") {
		t.Errorf("embedded resource = %q", got)
	}
	if got := llm.TextOf(res["c7"].Content); strings.Contains(got, "sk-withheld") {
		t.Errorf("a withheld provider key reached the server: %s", got)
	}
	if got := llm.TextOf(res["c7"].Content); !strings.Contains(got, `"DSH_BASE_VAR": "base"`) || !strings.Contains(got, `"DSH_CFG_VAR": "fallback"`) {
		t.Errorf("server environment lacks the base or config variables: %.300s", got)
	}
	if !strings.Contains(r.model.Requests()[0].System, "## everything") {
		t.Error("the server's instructions are not in the system prompt")
	}
}

// Cancelling a long call on a real server returns at once; the server
// stays usable.
func TestEverythingCancelLongCall(t *testing.T) {
	r := newRig(t, mcp.Options{},
		scripted.Call("c1", "mcp__everything__trigger-long-running-operation", map[string]int{"duration": 60, "steps": 60}, ""),
		scripted.Text("after"))
	startReady(t, r, everything(t, "everything"))
	a := r.agent(agent.Options{})
	if err := a.Send(context.Background(), []llm.Block{llm.Text("go")}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the call to start", func() bool {
		_, ok := a.Session().Last("tool/call")
		return ok
	})
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	a.Cancel("user")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WhenIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancelling took %s", d)
	}
	out := execute(t, r.h.Tools, "mcp__everything__echo", map[string]string{"message": "still here"})
	if textOf(out.Result) != "Echo: still here" {
		t.Errorf("after cancel: %+v", out.Result)
	}
}

// Killing the server mid-session: its tools report the restart, then the
// server is back under a new process.
func TestEverythingKilledAndRestarted(t *testing.T) {
	r := newRig(t, mcp.Options{RestartBackoff: 3 * time.Second})
	startReady(t, r, everything(t, "everything"))
	if out := execute(t, r.h.Tools, "mcp__everything__echo", map[string]string{"message": "one"}); textOf(out.Result) != "Echo: one" {
		t.Fatalf("echo = %+v", out.Result)
	}
	st, _ := r.m.Server("everything")
	pid := st.PID
	if pid <= 0 {
		t.Fatalf("no pid: %+v", st)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "restarting", func() bool { return state(r.m, "everything") == mcp.StateRestarting })
	if !has(toolNames(r.h.Tools, "mcp__everything__"), "mcp__everything__echo") {
		t.Error("tools were unregistered while the server restarts")
	}
	// A call made while the server restarts waits for it (within the
	// call's timeout) instead of failing at once.
	out := execute(t, r.h.Tools, "mcp__everything__echo", map[string]string{"message": "two"})
	if out.Result.IsError || textOf(out.Result) != "Echo: two" {
		t.Errorf("call while restarting = %+v", out.Result)
	}
	waitFor(t, 30*time.Second, "connected again", func() bool { return state(r.m, "everything") == mcp.StateConnected })
	st, _ = r.m.Server("everything")
	if st.PID == pid || st.PID <= 0 || st.Restarts != 1 {
		t.Errorf("after restart: %+v", st)
	}
	if out := execute(t, r.h.Tools, "mcp__everything__echo", map[string]string{"message": "three"}); textOf(out.Result) != "Echo: three" {
		t.Errorf("echo after restart = %+v", out.Result)
	}
}

// A lazy server with a cached tool list registers its tools with no
// process; the first call starts it.
func TestEverythingLazyStart(t *testing.T) {
	home := t.TempDir()
	cfg := everything(t, "everything")
	{
		r := newRig(t, mcp.Options{Home: home})
		startReady(t, r, cfg)
		if err := r.m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	r := newRig(t, mcp.Options{Home: home})
	start := time.Now()
	if err := r.m.Start(context.Background(), []mcp.ServerConfig{cfg}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	st, _ := r.m.Server("everything")
	if st.State != mcp.StateIdle || st.PID != 0 || !st.FromCache || !has(toolNames(r.h.Tools, "mcp__everything__"), "mcp__everything__echo") {
		t.Fatalf("lazy start: %+v", st)
	}
	if took > time.Second {
		t.Errorf("lazy Start took %s", took)
	}
	out := execute(t, r.h.Tools, "mcp__everything__echo", map[string]string{"message": "wake up"})
	if textOf(out.Result) != "Echo: wake up" {
		t.Fatalf("first call = %+v", out.Result)
	}
	if st, _ := r.m.Server("everything"); st.State != mcp.StateConnected || st.PID <= 0 {
		t.Errorf("after the first call: %+v", st)
	}
}

// server-filesystem: readOnlyHint decides ReadOnly; calls read and write
// in the allowed directory.
func TestFilesystemServer(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := mcp.ServerConfig{Name: "fs", Command: "node", Args: []string{nodeServer(t, "server-filesystem"), dir}}
	r := newRig(t, mcp.Options{},
		scripted.Call("c1", "mcp__fs__read_text_file", map[string]string{"path": filepath.Join(dir, "hello.txt")}, ""),
		scripted.Call("c2", "mcp__fs__write_file", map[string]string{"path": filepath.Join(dir, "new.txt"), "content": "written by dsh"}, ""),
		scripted.Call("c3", "mcp__fs__read_text_file", map[string]string{"path": "/etc/passwd"}, ""),
		scripted.Text("done"))
	startReady(t, r, cfg)
	for name, ro := range map[string]bool{"mcp__fs__read_text_file": true, "mcp__fs__list_directory": true, "mcp__fs__write_file": false, "mcp__fs__edit_file": false} {
		tl, ok := r.h.Tools.Get(name)
		if !ok {
			t.Fatalf("no %s in %v", name, toolNames(r.h.Tools, "mcp__fs__"))
		}
		if tl.Info().ReadOnly != ro {
			t.Errorf("%s ReadOnly = %v, want %v", name, tl.Info().ReadOnly, ro)
		}
	}
	a := r.agent(agent.Options{})
	r.run(a, "files")
	res := results(t, a.Session())
	if got := llm.TextOf(res["c1"].Content); !strings.Contains(got, "hello from disk") {
		t.Errorf("read = %q", got)
	}
	if res["c2"].IsError {
		t.Errorf("write = %+v", res["c2"])
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new.txt")); string(b) != "written by dsh" {
		t.Errorf("new.txt = %q", b)
	}
	if !res["c3"].IsError || !strings.Contains(llm.TextOf(res["c3"].Content), "denied") {
		t.Errorf("read outside the allowed directory = %+v", res["c3"])
	}
}

// BenchmarkEverythingStartup contrasts the lazy start with what it
// avoids: five server-everything processes started eagerly. "start" is
// New+Start (what delays the first prompt), "ready" also waits until
// every server is connected and listed.
func BenchmarkEverythingStartup(b *testing.B) {
	cfg := everything(b, "x")
	for _, mode := range []string{"eager-start", "eager-ready", "lazy-cached-start"} {
		b.Run(mode+"=5", func(b *testing.B) {
			home := b.TempDir()
			var cfgs []mcp.ServerConfig
			for i := range 5 {
				c := cfg
				c.Name = fmt.Sprintf("e%d", i)
				if mode != "lazy-cached-start" {
					c.Startup = mcp.StartupEager
				}
				cfgs = append(cfgs, c)
			}
			if mode == "lazy-cached-start" { // fill the cache once
				m, _ := mcp.New(mcp.Options{Tools: tool.NewRegistry(), Home: home})
				_ = m.Start(context.Background(), cfgs)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				_ = m.WaitReady(ctx)
				cancel()
				_ = m.Close()
			}
			for b.Loop() {
				m, err := mcp.New(mcp.Options{Tools: tool.NewRegistry(), Prompt: prompt.New(), Home: home})
				if err != nil {
					b.Fatal(err)
				}
				if err := m.Start(context.Background(), cfgs); err != nil {
					b.Fatal(err)
				}
				if mode == "eager-ready" {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					_ = m.WaitReady(ctx)
					cancel()
					for _, st := range m.Servers() {
						if st.State != mcp.StateConnected {
							b.Fatalf("%s: %s %s", st.Name, st.State, st.Error)
						}
					}
				}
				b.StopTimer()
				_ = m.Close()
				b.StartTimer()
			}
		})
	}
}
