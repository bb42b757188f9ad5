package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/fakeanthropic"
	"github.com/dshq/dsh/serve"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
)

// TestRoutesMatchOpenAPI: the server registers exactly the operations the
// document describes.
func TestRoutesMatchOpenAPI(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("document version %s, want 3.1", doc.OpenAPI)
	}
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	routes := serve.Routes()
	slices.Sort(documented)
	slices.Sort(routes)
	if !slices.Equal(documented, routes) {
		t.Fatalf("routes and document differ:\nroutes   %v\ndocument %v", routes, documented)
	}
}

// reply is the scripted model of these tests: "write FILE" makes it call
// write once, then say it is done; anything else gets a three-chunk answer.
func reply(req fakeanthropic.Request) fakeanthropic.Reply {
	text := req.LastUserText()
	if last := req.Messages[len(req.Messages)-1]; slices.ContainsFunc(last.Content, func(b fakeanthropic.Block) bool { return b.Type == "tool_result" }) {
		return fakeanthropic.Reply{Text: "done"}
	}
	if _, rest, ok := strings.Cut(text, "write "); ok {
		path := strings.Fields(rest)[0]
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_" + filepath.Base(path), Name: "write",
			Input: map[string]string{"file_path": path, "content": "written through the API"}}}}
	}
	return fakeanthropic.Reply{Text: "hello from the scripted model, answering " + strings.TrimSpace(text), Chunks: 4}
}

// collect reads a session's stream until a turn/end after seq from, or
// the deadline.
func collectTurn(t *testing.T, c *client.Client, id session.ID, from int64) []session.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []session.Event
	for ev, err := range c.Stream(ctx, id, from, client.StreamOptions{}) {
		if err != nil {
			t.Fatalf("stream: %v (events so far %d)", err, len(out))
		}
		out = append(out, ev)
		if ev.Type == session.TypeTurnEnd {
			return out
		}
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeAPI(t *testing.T) {
	e := dshtest.New(t, "..", reply)
	root := t.TempDir()
	projA, projB, outside := filepath.Join(root, "projA"), filepath.Join(root, "projB"), t.TempDir()
	mkdirs(t, projA, projB)
	if err := os.Symlink(outside, filepath.Join(projA, "escape")); err != nil {
		t.Fatal(err)
	}
	admin := token(t, e, "admin")
	viewer := token(t, e, "viewer", "--read-only")
	scoped := token(t, e, "scoped", "--workspace", projA)
	p := startServe(t, e, nil, "--root", root, "--max-request", "64KiB", "--approval-timeout", "2m")
	ct := newContract(t, p.URL)
	ctx := context.Background()
	c := client.New(p.URL, admin)
	c.HTTP = ct.client()
	anon := client.New(p.URL, "")
	anon.HTTP = ct.client()

	// Health is the one route without a token.
	if h, err := anon.Health(ctx); err != nil || h.Status != "ok" {
		t.Fatalf("health: %v %+v", err, h)
	}
	for _, bad := range []*client.Client{anon, {Base: p.URL, Token: "dsh_00000000_" + strings.Repeat("0", 64), HTTP: ct.client()}} {
		if _, err := bad.ListSessions(ctx, nil); client.StatusOf(err) != http.StatusUnauthorized {
			t.Fatalf("list without a valid token: %v", err)
		}
		if _, err := bad.CreateSession(ctx, api.CreateSession{Workspace: projA}); client.StatusOf(err) != http.StatusUnauthorized {
			t.Fatalf("create without a valid token: %v", err)
		}
	}
	if err := anon.Do(ctx, "GET", "/openapi.json", nil, nil); client.StatusOf(err) != http.StatusUnauthorized {
		t.Fatalf("openapi without a token: %v", err)
	}
	var doc map[string]any
	if err := c.Do(ctx, "GET", "/openapi.json", nil, &doc); err != nil || doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi: %v %v", err, doc["openapi"])
	}
	if who, err := c.Whoami(ctx); err != nil || who.Token != "admin" || who.Access != "full" {
		t.Fatalf("whoami: %v %+v", err, who)
	}
	if ws, err := c.Workspaces(ctx); err != nil || len(ws.Roots) != 1 {
		t.Fatalf("workspaces: %v %+v", err, ws)
	}

	// A session with a first prompt; its stream from 0 to the turn's end.
	s1, err := c.CreateSession(ctx, api.CreateSession{Workspace: "projA", Prompt: "say hello"})
	if err != nil {
		t.Fatal(err)
	}
	if s1.Workspace != projA {
		t.Fatalf("workspace %s, want %s", s1.Workspace, projA)
	}
	turn1 := collectTurn(t, c, s1.ID, 0)
	if end, _ := session.Decode[session.TurnEnd](turn1[len(turn1)-1]); end.Reason.Kind != session.EndCompleted {
		t.Fatalf("turn ended %+v", end.Reason)
	}
	var text strings.Builder
	chunks := 0
	for _, ev := range turn1 {
		if ev.Type == session.TypeAssistantChunk {
			ch, _ := session.Decode[session.AssistantChunk](ev)
			text.WriteString(ch.Chunk.Text)
			chunks++
		}
	}
	if !strings.Contains(text.String(), "hello from the scripted model") || chunks < 2 {
		t.Fatalf("streamed text %q in %d chunks", text.String(), chunks)
	}

	// A stream broken off and resumed from a seq loses nothing and repeats
	// nothing: it equals the stored history.
	page, err := c.Events(ctx, s1.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if page.More || len(page.Events) != len(turn1) {
		t.Fatalf("history has %d events (more %v), the stream %d", len(page.Events), page.More, len(turn1))
	}
	cut := int64(len(turn1) / 2)
	var resumed []session.Event
	sctx, scancel := context.WithCancel(ctx)
	for ev, err := range c.Stream(sctx, s1.ID, 0, client.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		resumed = append(resumed, ev)
		if ev.Seq == cut-1 {
			break
		}
	}
	scancel()
	rest := collectTurn(t, c, s1.ID, cut)
	resumed = append(resumed, rest...)
	if len(resumed) != len(page.Events) {
		t.Fatalf("resumed stream has %d events, history %d", len(resumed), len(page.Events))
	}
	for i, ev := range resumed {
		if ev.Seq != int64(i) || ev.Type != page.Events[i].Type || !bytes.Equal(ev.Data, page.Events[i].Data) {
			t.Fatalf("event %d differs: %s %d vs %s %d", i, ev.Type, ev.Seq, page.Events[i].Type, page.Events[i].Seq)
		}
	}
	small, err := c.Events(ctx, s1.ID, 2, 3)
	if err != nil || len(small.Events) != 3 || small.Events[0].Seq != 2 || small.Next != 5 || !small.More {
		t.Fatalf("page from 2, 3 events: %v %+v", err, small)
	}

	// The same over a WebSocket, resumed at a seq.
	wsURL := strings.Replace(p.URL, "http", "ws", 1) + "/v1/sessions/" + string(s1.ID) + "/ws?from=3"
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	conn, _, err := websocket.Dial(wctx, wsURL, &websocket.DialOptions{HTTPClient: ct.client(), HTTPHeader: http.Header{"Authorization": {"Bearer " + viewer}}})
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(3); want < int64(len(page.Events)); want++ {
		_, b, err := conn.Read(wctx)
		if err != nil {
			t.Fatal(err)
		}
		var ev session.Event
		if err := json.Unmarshal(b, &ev); err != nil || ev.Seq != want || ev.Type != page.Events[want].Type {
			t.Fatalf("websocket event %d: %v %s %d", want, err, ev.Type, ev.Seq)
		}
	}
	conn.Close(websocket.StatusNormalClosure, "")
	wcancel()

	// An approval answered over HTTP unblocks the agent.
	target := filepath.Join(projA, "approved.txt")
	acc, err := c.Send(ctx, s1.ID, "please write "+target)
	if err != nil {
		t.Fatal(err)
	}
	var asked []api.Approval
	waitFor(t, "the approval", func() bool {
		asked, err = c.Approvals(ctx, s1.ID)
		return err == nil && len(asked) == 1
	})
	if asked[0].Tool != "write" || !strings.Contains(string(asked[0].Arguments), "approved.txt") {
		t.Fatalf("approval %+v", asked[0])
	}
	if all, err := c.Approvals(ctx, ""); err != nil || len(all) != 1 {
		t.Fatalf("all approvals: %v %d", err, len(all))
	}
	if got, err := c.Session(ctx, s1.ID); err != nil || got.Status != api.StatusRunning || got.PendingApprovals != 1 {
		t.Fatalf("while asking: %v %+v", err, got)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the file was written before the answer")
	}
	if _, err := client.New(p.URL, viewer).Answer(ctx, s1.ID, asked[0].ID, api.Answer{Decision: api.DecisionAllow}); client.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("a read-only token answered: %v", err)
	}
	if _, err := c.Answer(ctx, s1.ID, asked[0].ID, api.Answer{Decision: "maybe"}); client.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("bad decision: %v", err)
	}
	if _, err := c.Answer(ctx, s1.ID, asked[0].ID, api.Answer{Decision: api.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	turn2 := collectTurn(t, c, s1.ID, acc.Seq)
	if b, err := os.ReadFile(target); err != nil || string(b) != "written through the API" {
		t.Fatalf("after the answer: %v %q", err, b)
	}
	if end, _ := session.Decode[session.TurnEnd](turn2[len(turn2)-1]); end.Reason.Kind != session.EndCompleted {
		t.Fatalf("turn 2 ended %+v", end.Reason)
	}
	if _, err := c.Answer(ctx, s1.ID, asked[0].ID, api.Answer{Decision: api.DecisionAllow}); client.StatusOf(err) != http.StatusNotFound {
		t.Fatalf("answering twice: %v", err)
	}

	// A denial with a reason: the model reads the reason.
	denied := filepath.Join(projA, "denied.txt")
	acc, err = c.Send(ctx, s1.ID, "please write "+denied)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second approval", func() bool {
		asked, err = c.Approvals(ctx, s1.ID)
		return err == nil && len(asked) == 1
	})
	if _, err := c.Answer(ctx, s1.ID, asked[0].ID, api.Answer{Decision: api.DecisionDeny, Reason: "not this file, use notes.md"}); err != nil {
		t.Fatal(err)
	}
	turn3 := collectTurn(t, c, s1.ID, acc.Seq)
	found := false
	for _, ev := range turn3 {
		if ev.Type == session.TypeToolResult && strings.Contains(string(ev.Data), "not this file, use notes.md") {
			found = true
		}
	}
	if _, err := os.Stat(denied); err == nil || !found {
		t.Fatalf("denial: file exists %v, reason in the result %v", err == nil, found)
	}

	// Steer, cancel, mode, fork, rewind.
	if _, err := c.Steer(ctx, s1.ID, "and be brief"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(ctx, s1.ID, "test cancel"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetMode(ctx, s1.ID, "acceptEdits"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetMode(ctx, s1.ID, "sideways"); client.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("bad mode: %v", err)
	}
	fork, err := c.Fork(ctx, s1.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if fork.ID == s1.ID || fork.Workspace != projA {
		t.Fatalf("fork %+v", fork)
	}
	if fp, err := c.Events(ctx, fork.ID, 0, 0); err != nil || len(fp.Events) != len(turn1) {
		t.Fatalf("fork of 1 turn has %d events, want %d (%v)", len(fp.Events), len(turn1), err)
	}
	if pts, err := c.RewindPoints(ctx, s1.ID); err != nil || len(pts.Points) < 3 || pts.Points[0].Prompt != "say hello" {
		t.Fatalf("rewind points: %v %+v", err, pts)
	}
	if _, err := c.Rewind(ctx, s1.ID, api.Rewind{To: "1", Scope: "sideways"}); client.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("rewind with a bad scope: %v", err)
	}

	// Workspaces: a scoped token sees and creates only under its own, and
	// no path trick gets it out.
	sB, err := c.CreateSession(ctx, api.CreateSession{Workspace: projB, Prompt: "hello B"})
	if err != nil {
		t.Fatal(err)
	}
	collectTurn(t, c, sB.ID, 0)
	sc := client.New(p.URL, scoped)
	sc.HTTP = ct.client()
	list, err := sc.ListSessions(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Workspace != projA {
			t.Fatalf("the scoped token lists a session in %s", s.Workspace)
		}
	}
	if len(list) < 2 {
		t.Fatalf("the scoped token lists %d sessions of projA", len(list))
	}
	for _, try := range []func() error{
		func() error { _, err := sc.Session(ctx, sB.ID); return err },
		func() error { _, err := sc.Events(ctx, sB.ID, 0, 0); return err },
		func() error { _, err := sc.Send(ctx, sB.ID, "hi"); return err },
		func() error { _, err := sc.Approvals(ctx, sB.ID); return err },
		func() error { _, err := sc.Session(ctx, sB.ID[:8]); return err },
	} {
		if err := try(); client.StatusOf(err) != http.StatusNotFound {
			t.Fatalf("the scoped token reached projB's session: %v", err)
		}
	}
	for _, ws := range []string{projB, "projB", "projA/../projB", projA + "/../projB", filepath.Join(projA, "escape"), "projA/escape", outside, "/", "..", root} {
		if _, err := sc.CreateSession(ctx, api.CreateSession{Workspace: ws}); client.StatusOf(err) != http.StatusForbidden {
			t.Fatalf("the scoped token created a session in %q: %v", ws, err)
		}
	}
	for _, ws := range []string{filepath.Join(projA, "escape"), outside, filepath.Dir(root)} {
		if _, err := c.CreateSession(ctx, api.CreateSession{Workspace: ws}); client.StatusOf(err) != http.StatusForbidden {
			t.Fatalf("a session outside the roots, %q: %v", ws, err)
		}
	}
	if s, err := sc.CreateSession(ctx, api.CreateSession{Workspace: projA}); err != nil || s.Workspace != projA {
		t.Fatalf("the scoped token in its workspace: %v", err)
	}

	// A read-only token reads and never acts.
	vc := client.New(p.URL, viewer)
	vc.HTTP = ct.client()
	if _, err := vc.Session(ctx, s1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := vc.CreateSession(ctx, api.CreateSession{Workspace: projA}); client.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("read-only create: %v", err)
	}
	if _, err := vc.Send(ctx, s1.ID, "hi"); client.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("read-only send: %v", err)
	}

	// Oversized and malformed requests are refused.
	if _, err := c.Send(ctx, s1.ID, strings.Repeat("x", 100<<10)); client.StatusOf(err) != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized: %v", err)
	}
	if err := c.Do(ctx, "POST", "/v1/sessions", map[string]any{"workspace": projA, "color": "blue"}, nil); client.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("unknown field: %v", err)
	}
	if _, err := c.Session(ctx, "no-such-session"); client.StatusOf(err) != http.StatusNotFound {
		t.Fatalf("unknown session: %v", err)
	}

	// Runs need the queue (PostgreSQL).
	if _, err := c.Runs(ctx, 10); client.StatusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("runs: %v", err)
	}
	if _, err := c.CreateRun(ctx, api.CreateRun{Workspace: projA, Prompt: "x"}); client.StatusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("create run: %v", err)
	}
	if _, err := c.Run(ctx, 1); client.StatusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("run: %v", err)
	}
	if _, err := c.CancelRun(ctx, 1); client.StatusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("cancel run: %v", err)
	}
	// /metrics: the turns above, their tokens and the server's gauges, in
	// the Prometheus text format.
	mreq, _ := http.NewRequestWithContext(ctx, "GET", p.URL+"/metrics", nil)
	mreq.Header.Set("Authorization", "Bearer "+admin)
	mresp, err := ct.client().Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	metricsText, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`dsh_turns_total{dsh_end_reason="completed"}`, "# TYPE gen_ai_client_token_usage histogram",
		`dsh_tool_calls_total{gen_ai_tool_name="write",outcome="ok"}`, `dsh_serve_sessions{state="idle"}`, "dsh_serve_heap_bytes ",
		// No --memory-budget: the front doors' one-session default limit is lifted.
		"dsh_serve_memory_limit_bytes 0\n"} {
		if mresp.StatusCode != http.StatusOK || !bytes.Contains(metricsText, []byte(want)) {
			t.Errorf("/metrics (%d) lacks %s:\n%s", mresp.StatusCode, want, metricsText)
		}
	}

	// Delete (JSONL cannot delete: 501, the session is unloaded).
	if err := c.DeleteSession(ctx, fork.ID); err != nil && client.StatusOf(err) != http.StatusNotImplemented {
		t.Fatalf("delete: %v", err)
	}
	sessions, err := c.ListSessions(ctx, url.Values{"workspace": {projA}})
	if err != nil || len(sessions) == 0 {
		t.Fatalf("list: %v %d", err, len(sessions))
	}

	// Revoking a token takes effect at once.
	if r := e.Run("", "serve", "token", "revoke", "viewer"); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	if _, err := vc.Session(ctx, s1.ID); client.StatusOf(err) != http.StatusUnauthorized {
		t.Fatalf("a revoked token: %v", err)
	}

	if m := ct.missing("/ui"); len(m) > 0 { // TestWebLoginAndCSRF exercises the UI's
		t.Fatalf("operations never exercised: %v", m)
	}
	p.Stop()
	if strings.Contains(p.Stderr(), secretKey) {
		t.Fatal("the server printed the provider key")
	}
	logs, _ := os.ReadFile(filepath.Join(e.Home, "logs", "dsh.log"))
	if bytes.Contains(logs, []byte(secretKey)) || bytes.Contains(logs, []byte(admin)) {
		t.Fatal("the log carries a secret")
	}
}
