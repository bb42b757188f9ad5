package acpchild_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/subagent/acpchild"
)

// buildDsh builds the dsh binary; the child under test is `dsh acp`.
func buildDsh(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dsh")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/dsh").CombinedOutput(); err != nil {
		t.Fatalf("building dsh: %v\n%s", err, out)
	}
	if out, _ := exec.Command(bin, "acp", "--help").CombinedOutput(); !strings.Contains(string(out), "acp") {
		t.Skip("this build has no `dsh acp`")
	}
	return bin
}

// model is a DeepSeek-format loopback server: it answers with text, or
// stalls (until the client goes away) when the prompt says so.
func model(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.Contains(string(body), "STALL") {
			fmt.Fprintf(w, "data: %s\n\n", `{"id":"x","object":"chat.completion.chunk","model":"deepseek-chat","choices":[{"index":0,"delta":{"role":"assistant","content":"thinking"}}]}`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		c, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion.chunk", "model": "deepseek-chat",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "child answer"}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 5, "completion_tokens": 2}})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", c)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func provider(t *testing.T, bin, url string) *acpchild.Provider {
	return acpchild.New(acpchild.Config{Command: bin, Args: []string{"acp"}, Env: map[string]string{
		"DSH_HOME": t.TempDir(), "DEEPSEEK_API_KEY": "k", "DEEPSEEK_BASE_URL": url, "DSH_MODEL": "deepseek/deepseek-chat",
	}, Grace: time.Second})
}

func TestACPChildAnswers(t *testing.T) {
	bin := buildDsh(t)
	p := provider(t, bin, model(t).URL)
	svc := subagent.NewService(subagent.Options{})
	svc.Register(p)
	res, err := svc.Delegate(context.Background(), "acp", subagent.Request{Prompt: []llm.Block{llm.Text("say something")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != subagent.Completed || llm.TextOf(res.Output) != "child answer" || res.ChildSession == "" {
		t.Fatalf("%+v", res)
	}
}

func TestACPChildCancelLeavesNoProcess(t *testing.T) {
	bin := buildDsh(t)
	p := provider(t, bin, model(t).URL)
	svc := subagent.NewService(subagent.Options{})
	svc.Register(p)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cancel()
	}()
	res, err := svc.Delegate(ctx, "acp", subagent.Request{Prompt: []llm.Block{llm.Text("STALL please")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != subagent.Aborted {
		t.Fatalf("%+v", res)
	}
	// No dsh acp process of ours is left.
	out, _ := exec.Command("pgrep", "-f", bin+" acp").Output()
	if strings.TrimSpace(string(out)) != "" {
		t.Fatalf("child processes left behind: %s", out)
	}
}

func TestEnvScrub(t *testing.T) {
	env := acpchild.Env([]string{"PATH=/bin", "OPENAI_API_KEY=x", "GITHUB_TOKEN=y", "HOME=/h"}, map[string]string{"OPENAI_API_KEY": "child"})
	joined := strings.Join(env, " ")
	if strings.Contains(joined, "GITHUB_TOKEN") || !strings.Contains(joined, "OPENAI_API_KEY=child") || !strings.Contains(joined, "PATH=/bin") {
		t.Fatalf("%v", env)
	}
	_ = os.Getenv
}

// helperEnv selects the helper mode when the test binary runs as a child.
const helperEnv = "ACPCHILD_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		helper(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper is a minimal ACP agent speaking raw NDJSON on stdio. Modes:
// "answer" opens its session after a delay and answers a prompt; "stuck"
// opens its session, then never reads stdin again.
func helper(mode string) {
	in := bufio.NewReader(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	const sid = "helper-session"
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		reply := func(result any) {
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
		}
		switch msg.Method {
		case "initialize":
			reply(map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{}, "authMethods": []any{}})
		case "session/new":
			if mode == "answer" {
				// Late enough that a caller reading the session id right
				// after Start would miss it.
				time.Sleep(300 * time.Millisecond)
			}
			reply(map[string]any{"sessionId": sid})
			if mode == "stuck" {
				time.Sleep(time.Hour) // stdin is never read again
				return
			}
		case "session/prompt":
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": sid,
				"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "helper answer"}}}})
			reply(map[string]any{"stopReason": "end_turn"})
		}
	}
}

// helperProvider runs the test binary as a helper child; marker, an
// argument, makes its processes findable with pgrep. Cleanup kills any that
// are left (by pid) so a failing test does not leak them.
func helperProvider(t *testing.T, mode string, grace time.Duration) (*acpchild.Provider, string) {
	t.Helper()
	marker := fmt.Sprintf("acpchild-helper-%s-%d-%d", mode, os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		for _, pid := range helperPids(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return acpchild.New(acpchild.Config{Command: os.Args[0], Args: []string{marker}, Env: map[string]string{helperEnv: mode}, Grace: grace}), marker
}

func helperPids(marker string) []int {
	out, _ := exec.Command("pgrep", "-f", marker).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// startSessions records the child session of every subagent/start.
func startSessions(svc *subagent.Service) func() []string {
	var mu sync.Mutex
	var got []string
	svc.Started.Listen(func(_ context.Context, n subagent.Note) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(n.Start.ChildSession), string(n.Child))
		return nil
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// The child's session id is known when the run is recorded, and in the
// result.
func TestACPChildSessionRecorded(t *testing.T) {
	p, marker := helperProvider(t, "answer", 500*time.Millisecond)
	svc := subagent.NewService(subagent.Options{})
	svc.Register(p)
	starts := startSessions(svc)
	res, err := svc.Delegate(context.Background(), "acp", subagent.Request{Prompt: []llm.Block{llm.Text("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != subagent.Completed || llm.TextOf(res.Output) != "helper answer" {
		t.Fatalf("%+v", res)
	}
	if got := starts(); len(got) != 2 || got[0] != "helper-session" || got[1] != "helper-session" {
		t.Errorf("subagent/start child session %q", got)
	}
	if res.ChildSession != "helper-session" {
		t.Errorf("result without the child session: %+v", res)
	}
	if pids := helperPids(marker); len(pids) != 0 {
		t.Fatalf("helper processes left behind: %v", pids)
	}
}

// A child that stopped reading its stdin while a large prompt is written
// must not hold up cancelling the parent, and must not outlive it.
func TestACPChildCancelStuckChild(t *testing.T) {
	p, marker := helperProvider(t, "stuck", 500*time.Millisecond)
	svc := subagent.NewService(subagent.Options{})
	svc.Register(p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(time.Second, cancel)
	type outcome struct {
		res subagent.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		big := strings.Repeat("x", 256<<10)
		res, err := svc.Delegate(ctx, "acp", subagent.Request{Prompt: []llm.Block{llm.Text(big)}})
		done <- outcome{res, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(10 * time.Second): // a hang detector, not a timing assertion
		t.Fatal("Delegate did not return after the parent was cancelled")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.StopReason != subagent.Aborted || o.res.ChildSession != "helper-session" {
		t.Fatalf("%+v", o.res)
	}
	if pids := helperPids(marker); len(pids) != 0 {
		t.Fatalf("helper processes left behind: %v", pids)
	}
}
