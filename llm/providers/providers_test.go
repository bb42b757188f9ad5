package providers

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/conformance"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func ids(ms []llm.ModelInfo) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func TestPresetsFollowKeys(t *testing.T) {
	provs, err := Resolve(Config{}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(provs) != 3 {
		t.Fatalf("got %d providers", len(provs))
	}
	for _, p := range provs {
		if p.Enabled || !p.Builtin || p.KeySet {
			t.Errorf("%s: enabled=%v builtin=%v keySet=%v without a key", p.Name, p.Enabled, p.Builtin, p.KeySet)
		}
	}
	provs, _ = Resolve(Config{}, envOf(map[string]string{
		"DEEPSEEK_API_KEY": "sk-ds", "DEEPSEEK_BASE_URL": "https://ds.example/v9",
	}))
	ds := provs[0]
	if ds.Name != "deepseek" || !ds.Enabled || !ds.KeySet || ds.BaseURL != "https://ds.example/v9" || ds.Type != TypeOpenAI {
		t.Fatalf("deepseek = %+v", ds)
	}
	if got := ids(ds.Models); got[0] != "deepseek/deepseek-v4-flash" {
		t.Errorf("models = %v", got)
	}
	if provs[1].Enabled || provs[2].Enabled {
		t.Errorf("anthropic/openai enabled without keys")
	}
	// Explicit settings: base URL beats the variable; models are merged.
	provs, _ = Resolve(Config{Providers: map[string]ProviderConfig{
		"deepseek":  {BaseURL: "https://settings.example", Models: []ModelConfig{{ID: "deepseek/deepseek-v5", ContextWindow: 2_000_000}, {ID: "deepseek-chat", MaxOutput: 4096}}},
		"anthropic": {},
		"openai":    {Disabled: true},
	}}, envOf(map[string]string{"DEEPSEEK_BASE_URL": "https://env.example", "OPENAI_API_KEY": "sk-oa"}))
	ds = provs[0]
	if ds.BaseURL != "https://settings.example" || !ds.Enabled || ds.KeySet {
		t.Errorf("deepseek = %+v", ds)
	}
	found := map[string]llm.ModelInfo{}
	for _, m := range ds.Models {
		found[m.ID] = m
	}
	if m := found["deepseek/deepseek-v5"]; m.ContextWindow != 2_000_000 {
		t.Errorf("added model = %+v", m)
	}
	if m := found["deepseek/deepseek-chat"]; m.MaxOutput != 4096 || m.ContextWindow != 131_072 {
		t.Errorf("overridden model = %+v", m)
	}
	if !provs[1].Enabled || provs[1].Name != "anthropic" {
		t.Errorf("explicit anthropic not enabled: %+v", provs[1])
	}
	if provs[2].Enabled {
		t.Errorf("disabled openai enabled")
	}
}

func TestConfigErrors(t *testing.T) {
	two := 2
	for name, pc := range map[string]ProviderConfig{
		"no-type":     {BaseURL: "http://x", Models: []ModelConfig{{ID: "m"}}},
		"bad-type":    {Type: "gemini", BaseURL: "http://x", Models: []ModelConfig{{ID: "m"}}},
		"no-url":      {Type: TypeOpenAI, Models: []ModelConfig{{ID: "m"}}},
		"no-models":   {Type: TypeOpenAI, BaseURL: "http://x"},
		"bad-timeout": {Type: TypeOpenAI, BaseURL: "http://x", Models: []ModelConfig{{ID: "m"}}, IdleTimeout: "soon", MaxRetries: &two},
		"bad-replay":  {Type: TypeOpenAI, BaseURL: "http://x", Models: []ModelConfig{{ID: "m"}}, ReasoningReplay: "always"},
	} {
		if _, err := Resolve(Config{Providers: map[string]ProviderConfig{name: pc}}, envOf(nil)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Resolve(Config{Providers: map[string]ProviderConfig{"anthropic": {Type: TypeOpenAI}}}, envOf(nil)); err == nil {
		t.Errorf("changing a preset's type: no error")
	}
	if _, err := resolveAliases(map[string]string{"a": "b", "b": "a"}); err == nil {
		t.Errorf("alias cycle: no error")
	}
	svc := llm.NewService()
	if _, err := Install(svc, Config{Aliases: map[string]string{"x": "x"}}, envOf(nil), nil); err == nil {
		t.Errorf("self alias: no error")
	}
}

func TestDefaultModel(t *testing.T) {
	cfg := Config{DefaultModel: "anthropic/claude-sonnet-4-5"}
	if got := DefaultModel(cfg, envOf(map[string]string{"DSH_MODEL": "fast"})); got != "fast" {
		t.Errorf("DSH_MODEL: %q", got)
	}
	if got := DefaultModel(cfg, envOf(nil)); got != "anthropic/claude-sonnet-4-5" {
		t.Errorf("settings: %q", got)
	}
	if got := DefaultModel(Config{}, envOf(map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"})); got != "anthropic/claude-sonnet-4-5" {
		t.Errorf("fallback: %q", got)
	}
	if got := DefaultModel(Config{}, envOf(nil)); got != "" {
		t.Errorf("nothing configured: %q", got)
	}
	local := Config{Providers: map[string]ProviderConfig{"local": {Type: TypeOpenAI, BaseURL: "http://127.0.0.1:1/v1", Models: []ModelConfig{{ID: "qwen3"}}}}}
	if got := DefaultModel(local, envOf(nil)); got != "local/qwen3" {
		t.Errorf("custom fallback: %q", got)
	}
}

// replay serves the openai text transcript and records request bodies and
// headers.
type replay struct {
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	body    []byte
}

func (r *replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	r.mu.Lock()
	r.bodies = append(r.bodies, m)
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Write(r.body)
}

func TestInstallEndToEnd(t *testing.T) {
	body, err := fs.ReadFile(conformance.Transcripts("openai"), "text.sse")
	if err != nil {
		t.Fatal(err)
	}
	rp := &replay{body: body}
	srv := httptest.NewServer(rp)
	defer srv.Close()

	cfg := Config{
		Providers: map[string]ProviderConfig{
			"local": {Type: TypeOpenAI, BaseURL: srv.URL + "/v1", APIKeyEnv: "LOCAL_KEY",
				Headers: map[string]string{"X-Referer": "${REF}/dsh"},
				Models:  []ModelConfig{{ID: "org/model-a", ContextWindow: 32768, MaxOutput: 4096}, {ID: "local/model-b"}}},
		},
		Aliases: map[string]string{"fast": "local/org/model-a", "f": "fast"},
	}
	env := envOf(map[string]string{"LOCAL_KEY": "sk-local", "REF": "https://example.org"})
	svc := llm.NewService()
	dispose, err := Install(svc, cfg, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(svc.Models()), ","); got != "local/org/model-a,local/model-b" {
		t.Fatalf("models = %s", got)
	}
	if info, ok := svc.Info("f"); !ok || info.ContextWindow != 32768 {
		t.Errorf("info via alias chain = %+v, %v", info, ok)
	}
	for _, model := range []string{"local/org/model-a", "fast", "f", "model-b"} {
		stream, err := svc.Stream(context.Background(), &llm.Request{Model: model,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("hi")}}}})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		var asm llm.Assembler
		for c, err := range stream {
			if err != nil {
				t.Fatalf("%s: %v", model, err)
			}
			asm.Push(c)
		}
		msg, _ := asm.Message()
		if llm.TextOf(msg.Content) != "Hello! How can I help you today?" {
			t.Errorf("%s: reply %+v", model, msg)
		}
	}
	rp.mu.Lock()
	wantWire := []string{"org/model-a", "org/model-a", "org/model-a", "model-b"}
	for i, b := range rp.bodies {
		if b["model"] != wantWire[i] {
			t.Errorf("request %d: wire model %v, want %s", i, b["model"], wantWire[i])
		}
		h := rp.headers[i]
		if h.Get("Authorization") != "Bearer sk-local" || h.Get("X-Referer") != "https://example.org/dsh" {
			t.Errorf("request %d headers: %v", i, h)
		}
	}
	rp.mu.Unlock()

	// All or nothing: a second install collides and leaves the first intact.
	if _, err := Install(svc, cfg, env, nil); llm.CodeOf(err) != llm.CodeDuplicateAdapter {
		t.Errorf("second install: %v", err)
	}
	if len(svc.Models()) != 2 {
		t.Errorf("models after failed install: %v", ids(svc.Models()))
	}
	dispose()
	dispose()
	if len(svc.Models()) != 0 {
		t.Errorf("models after dispose: %v", ids(svc.Models()))
	}
}

func TestExplicitPresetWithoutKey(t *testing.T) {
	svc := llm.NewService()
	dispose, err := Install(svc, Config{Providers: map[string]ProviderConfig{"anthropic": {}, "deepseek": {}}}, envOf(nil), http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	defer dispose()
	for model, env := range map[string]string{"anthropic/claude-sonnet-4-5": "ANTHROPIC_API_KEY", "deepseek/deepseek-v4-pro": "DEEPSEEK_API_KEY"} {
		_, err := svc.Stream(context.Background(), &llm.Request{Model: model})
		if llm.CodeOf(err) != llm.CodeAuth || !strings.Contains(err.Error(), env) {
			t.Errorf("%s: err = %v, want AUTH naming %s", model, err, env)
		}
	}
}

func TestSecretEnvNames(t *testing.T) {
	cfg := Config{Providers: map[string]ProviderConfig{
		"openai": {APIKeyEnv: "MY_OPENAI"},
		"corp": {Type: TypeOpenAI, BaseURL: "https://llm.corp", APIKeyEnv: "CORP_LLM",
			Headers: map[string]string{"X-Tenant": "${CORP_TENANT}", "X-Sig": "v1 $CORP_SIG", "X-Fixed": "plain"}},
	}}
	got := strings.Join(SecretEnvNames(cfg), " ")
	want := "ANTHROPIC_API_KEY CORP_LLM CORP_SIG CORP_TENANT DEEPSEEK_API_KEY MY_OPENAI OPENAI_API_KEY"
	if got != want {
		t.Errorf("SecretEnvNames = %q, want %q", got, want)
	}
}

// Which models are sent images: a model's own "images" setting wins, then
// the provider's noImages, then the provider's default; aliases resolve.
func TestAcceptsImages(t *testing.T) {
	no, yes := true, true
	off := false
	cfg := Config{
		Providers: map[string]ProviderConfig{
			"local": {Models: []ModelConfig{{ID: "vision"}, {ID: "local/text", Images: &off}}},
			"plain": {NoImages: &no, Models: []ModelConfig{{ID: "seeing", Images: &yes}}},
		},
		Aliases: map[string]string{"eyes": "local/vision", "blind": "text-alias", "text-alias": "local/text"},
	}
	for model, want := range map[string]bool{
		"local/vision": true, "local/text": false, "eyes": true, "blind": false,
		"plain/other": false, "plain/seeing": true,
		"deepseek/deepseek-v4-flash": false, "anthropic/claude-sonnet-4-5": true, "openai/gpt-5": true,
		"demo/demo": false, "nonsense": false,
	} {
		if got := AcceptsImages(cfg, model); got != want {
			t.Errorf("AcceptsImages(%q) = %v, want %v", model, got, want)
		}
	}
}

// Many sessions calling one provider at once (dsh serve, parallel
// subagents) keep their connections between calls: the second round of
// concurrent calls dials nothing. With net/http's default of two idle
// connections per host, all but two would be closed after each call and
// dialled (over TLS, handshaken) again.
func TestInstallKeepsConcurrentConnections(t *testing.T) {
	body, err := fs.ReadFile(conformance.Transcripts("openai"), "text.sse")
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
		conns   atomic.Int32
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		wait := all
		if arrived++; arrived == n { // the round's last call releases them all
			close(all)
			arrived, all = 0, make(chan struct{})
		}
		mu.Unlock()
		<-wait
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cfg := Config{Providers: map[string]ProviderConfig{
		"local": {Type: TypeOpenAI, BaseURL: srv.URL + "/v1", APIKeyEnv: "LOCAL_KEY", Models: []ModelConfig{{ID: "m"}}},
	}}
	svc := llm.NewService()
	dispose, err := Install(svc, cfg, envOf(map[string]string{"LOCAL_KEY": "k"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dispose()
	round := func() {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				stream, err := svc.Stream(context.Background(), &llm.Request{Model: "local/m",
					Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("hi")}}}})
				if err != nil {
					t.Error(err)
					return
				}
				for _, err := range stream {
					if err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	round()
	if got := conns.Load(); got != n {
		t.Fatalf("first round: %d connections for %d concurrent calls", got, n)
	}
	round()
	if got := conns.Load(); got != n {
		t.Errorf("second round dialled %d new connections, want none", got-n)
	}
}
