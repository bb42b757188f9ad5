package telemetry_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/fakeanthropic"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
)

func TestMain(m *testing.M) { dshtest.Main(m, "..", raceBuild) }

// collector is an OTLP/HTTP receiver on loopback: it keeps the spans and
// the metric names it is sent.
type collector struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string
	metrics map[string]bool
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	raw, err := io.ReadAll(body)
	if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want protobuf", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var resp proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					c.service = append(c.service, kv.Value.GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		resp = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					c.metrics[m.Name] = true
				}
			}
		}
		resp = &colmetricpb.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, r)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func str(s *tracepb.Span, key string) string { return attr(s, key).GetStringValue() }
func num(s *tracepb.Span, key string) int64  { return attr(s, key).GetIntValue() }

// TestOTLPSpanTreeOfTwoStepTurn runs dsh -p on a turn of two steps (a read,
// then an answer) with the OTLP endpoint on loopback, and checks the span
// tree the collector receives: the turn, its two steps, a model call in
// each and the tool call in the first, with their GenAI attributes.
func TestOTLPSpanTreeOfTwoStepTurn(t *testing.T) {
	e := dshtest.New(t, "..", twoStepModel)
	if err := os.WriteFile(filepath.Join(e.Dir, "notes.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	col := &collector{metrics: map[string]bool{}}
	srv := httptest.NewServer(col)
	defer srv.Close()

	cmd := exec.Command(dshtest.Bin, "-p", "what do the notes say?")
	cmd.Dir = e.Dir
	cmd.Env = e.Environ("OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL, "OTEL_SERVICE_NAME=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("dsh -p: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "the notes say hello") {
		t.Fatalf("answer %q", out.String())
	}

	checkTwoStepTurn(t, col, "")
}

// twoStepModel answers a read of notes.txt, then what the notes say.
func twoStepModel(req fakeanthropic.Request) fakeanthropic.Reply {
	last := req.Messages[len(req.Messages)-1]
	if slices.ContainsFunc(last.Content, func(b fakeanthropic.Block) bool { return b.Type == "tool_result" }) {
		return fakeanthropic.Reply{Text: "the notes say hello", InputTokens: 300, OutputTokens: 7}
	}
	return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_read1", Name: "read",
		Input: map[string]string{"file_path": "notes.txt"}}}, InputTokens: 200, OutputTokens: 20}
}

// checkTwoStepTurn checks the spans and metrics of twoStepModel's turn:
// the turn, its two steps, a model call in each and the tool call in the
// first, with their GenAI attributes; conversation, when set, is the
// session id the turn must name.
func checkTwoStepTurn(t *testing.T, col *collector, conversation string) {
	t.Helper()
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.service) == 0 || col.service[0] != "dsh" {
		t.Errorf("service.name %v, want dsh", col.service)
	}
	byName := map[string][]*tracepb.Span{}
	byID := map[string]*tracepb.Span{}
	for _, s := range col.spans {
		byName[s.Name] = append(byName[s.Name], s)
		byID[string(s.SpanId)] = s
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	if len(byName["invoke_agent dsh"]) != 1 || len(byName["step"]) != 2 || len(byName["chat claude-sonnet-4-5"]) != 2 || len(byName["execute_tool read"]) != 1 {
		t.Fatalf("spans %v (%d in all), want one turn, two steps, two model calls and one tool call", names, len(col.spans))
	}
	turn := byName["invoke_agent dsh"][0]
	if len(turn.ParentSpanId) != 0 {
		t.Errorf("the turn has a parent")
	}
	if str(turn, "gen_ai.operation.name") != "invoke_agent" || str(turn, "gen_ai.conversation.id") == "" ||
		str(turn, "dsh.turn.end_reason") != "completed" || num(turn, "gen_ai.usage.input_tokens") != 500 || num(turn, "gen_ai.usage.output_tokens") != 27 {
		t.Errorf("turn attributes %v", turn.Attributes)
	}
	if conversation != "" && str(turn, "gen_ai.conversation.id") != conversation {
		t.Errorf("the turn's conversation is %q, want the session %s", str(turn, "gen_ai.conversation.id"), conversation)
	}
	parent := func(s *tracepb.Span) *tracepb.Span { return byID[string(s.ParentSpanId)] }
	steps := byName["step"]
	slices.SortFunc(steps, func(a, b *tracepb.Span) int { return int(num(a, "dsh.step") - num(b, "dsh.step")) })
	for i, s := range steps {
		if parent(s) != turn {
			t.Errorf("step %d is not the turn's child", i+1)
		}
		if !bytes.Equal(s.TraceId, turn.TraceId) {
			t.Errorf("step %d is in another trace", i+1)
		}
	}
	wantFinish := map[string]string{string(steps[0].SpanId): "tool-calls", string(steps[1].SpanId): "stop"}
	wantTokens := map[string][2]int64{string(steps[0].SpanId): {200, 20}, string(steps[1].SpanId): {300, 7}}
	for _, c := range byName["chat claude-sonnet-4-5"] {
		p := parent(c)
		if p == nil || p.Name != "step" {
			t.Fatalf("a model call's parent is %v, want a step", p)
		}
		if c.Kind != tracepb.Span_SPAN_KIND_CLIENT || str(c, "gen_ai.operation.name") != "chat" || str(c, "gen_ai.provider.name") != "anthropic" ||
			str(c, "gen_ai.request.model") != "claude-sonnet-4-5" || str(c, "gen_ai.response.model") != "claude-sonnet-4-5" {
			t.Errorf("model call attributes %v", c.Attributes)
		}
		fr := attr(c, "gen_ai.response.finish_reasons").GetArrayValue().GetValues()
		if len(fr) != 1 || fr[0].GetStringValue() != wantFinish[string(p.SpanId)] {
			t.Errorf("step %d: finish reasons %v, want %s", num(p, "dsh.step"), fr, wantFinish[string(p.SpanId)])
		}
		tok := wantTokens[string(p.SpanId)]
		if num(c, "gen_ai.usage.input_tokens") != tok[0] || num(c, "gen_ai.usage.output_tokens") != tok[1] {
			t.Errorf("step %d: tokens in %d out %d, want %v", num(p, "dsh.step"), num(c, "gen_ai.usage.input_tokens"), num(c, "gen_ai.usage.output_tokens"), tok)
		}
		if c.StartTimeUnixNano < p.StartTimeUnixNano || c.EndTimeUnixNano > p.EndTimeUnixNano {
			t.Errorf("a model call is outside its step")
		}
	}
	tc := byName["execute_tool read"][0]
	if parent(tc) != steps[0] {
		t.Errorf("the tool call's parent is %v, want step 1", parent(tc))
	}
	if str(tc, "gen_ai.operation.name") != "execute_tool" || str(tc, "gen_ai.tool.name") != "read" || str(tc, "gen_ai.tool.call.id") != "toolu_read1" ||
		tc.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("tool call %v %v", tc.Attributes, tc.Status)
	}
	for _, m := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "dsh.tokens", "dsh.turns", "dsh.tool.calls"} {
		if !col.metrics[m] {
			t.Errorf("metric %s was not exported (got %v)", m, col.metrics)
		}
	}
}

// TestOTLPFromServe: the same turn run by dsh serve, sent over the API,
// exports the same span tree, named by the session.
func TestOTLPFromServe(t *testing.T) {
	e := dshtest.New(t, "..", twoStepModel)
	if err := os.WriteFile(filepath.Join(e.Dir, "notes.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	col := &collector{metrics: map[string]bool{}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	tok := e.Run("", "serve", "token", "create", "otlp")
	if tok.Code != 0 {
		t.Fatal(tok.Stderr)
	}
	cmd := exec.Command(dshtest.Bin, "serve", "--listen", "127.0.0.1:0", "--root", e.Dir)
	cmd.Dir = e.Dir
	cmd.Env = e.Environ("OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL, "OTEL_SERVICE_NAME=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
				select {
				case addr <- strings.Fields(url)[0]:
				default:
				}
			}
		}
	}()
	var base string
	select {
	case base = <-addr:
	case <-time.After(60 * time.Second):
		t.Fatal("dsh serve did not listen")
	}
	c := client.New(base, strings.TrimSpace(tok.Stdout))
	ctx := context.Background()
	s, err := c.CreateSession(ctx, api.CreateSession{Workspace: e.Dir, Prompt: "what do the notes say?"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for ev, err := range c.Stream(sctx, s.ID, 0, client.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == session.TypeTurnEnd {
			break
		}
	}
	// A stopping server flushes what it has not exported yet.
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		// 3: stopped by a signal, as every dsh front door reports it.
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
			t.Fatalf("dsh serve: %v", err)
		}
	}
	checkTwoStepTurn(t, col, string(s.ID))
}
