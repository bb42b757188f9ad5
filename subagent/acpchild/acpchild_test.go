package acpchild_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	if res.StopReason != subagent.Completed || llm.TextOf(res.Output) != "child answer" {
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
