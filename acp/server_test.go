package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	"github.com/dshq/dsh/acp"
	"github.com/dshq/dsh/acp/acptest"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of the default HTTP transport.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

func TestInitialize(t *testing.T) {
	model := acptest.New()
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	r := h.initialize(sdk.ClientCapabilities{})
	if r.ProtocolVersion != 1 || !r.AgentCapabilities.LoadSession || r.AgentInfo == nil || r.AgentInfo.Name != "dsh" {
		t.Fatalf("initialize: %+v", r)
	}
	pc := r.AgentCapabilities.PromptCapabilities
	if !pc.EmbeddedContext || pc.Audio || pc.Image { // DeepSeek takes no images
		t.Fatalf("prompt capabilities %+v", pc)
	}
	sc := r.AgentCapabilities.SessionCapabilities
	if sc.List == nil || sc.Resume == nil || sc.Close == nil {
		t.Fatalf("session capabilities %+v", sc)
	}
	// A newer client is answered with the version dsh speaks.
	r2, err := h.conn.Initialize(h.ctx(), sdk.InitializeRequest{ProtocolVersion: 7})
	if err != nil || r2.ProtocolVersion != 1 {
		t.Fatalf("negotiation: %v %+v", err, r2)
	}
}

func TestPromptStreamsChunks(t *testing.T) {
	model := acptest.New(acptest.Reply{
		acptest.ReasoningDelta("Let me "), acptest.ReasoningDelta("think."),
		acptest.TextDelta("Hel"), acptest.TextDelta("lo, "), acptest.TextDelta("world"),
		acptest.Finish("stop"),
	})
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	if !strings.Contains(string(id), "-") {
		t.Fatalf("session id %q", id)
	}
	r := h.mustPrompt(id, "say hello", sdk.StopReasonEndTurn)
	us := h.client.updatesOf(id)
	var chunks, thoughts []string
	for _, u := range us {
		switch kind(u) {
		case "agent_message_chunk":
			chunks = append(chunks, text(u))
		case "agent_thought_chunk":
			thoughts = append(thoughts, text(u))
		}
	}
	if !slices.Equal(chunks, []string{"Hel", "lo, ", "world"}) || !slices.Equal(thoughts, []string{"Let me ", "think."}) {
		t.Fatalf("chunks %q thoughts %q", chunks, thoughts)
	}
	if r.Usage == nil || r.Usage.InputTokens != 100 || r.Usage.OutputTokens != 10 || r.Usage.TotalTokens != 110 {
		t.Fatalf("usage %+v", r.Usage)
	}
	if !slices.ContainsFunc(us, func(u sdk.SessionUpdate) bool { return u.UsageUpdate != nil && u.UsageUpdate.Size > 0 }) {
		t.Fatalf("no usage_update in %s", describe(us))
	}
	if !slices.ContainsFunc(us, func(u sdk.SessionUpdate) bool {
		return u.AvailableCommandsUpdate != nil && u.AvailableCommandsUpdate.AvailableCommands[0].Name == "compact"
	}) {
		t.Fatalf("no available_commands_update in %s", describe(us))
	}
	if !slices.ContainsFunc(us, func(u sdk.SessionUpdate) bool {
		return u.SessionInfoUpdate != nil && *u.SessionInfoUpdate.Title == "say hello"
	}) {
		t.Fatalf("no session_info_update title in %s", describe(us))
	}
	// The user's prompt is not echoed live.
	if slices.ContainsFunc(us, func(u sdk.SessionUpdate) bool { return u.UserMessageChunk != nil }) {
		t.Fatal("user message echoed live")
	}
}

func writeCall(id, path, content string) acptest.Reply {
	return acptest.Tool(id, "write", map[string]any{"file_path": path, "content": content})
}

func TestPermissionAnsweredBothWays(t *testing.T) {
	model := acptest.New(
		writeCall("call_1", "a.txt", "first\n"), acptest.Text("rejected, ok"),
		writeCall("call_2", "a.txt", "second\n"), acptest.Text("written"),
	)
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()

	h.client.permission = func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse { return selectOption("reject_once") }
	h.mustPrompt(id, "write a.txt", sdk.StopReasonEndTurn)
	if _, err := os.Stat(filepath.Join(h.dir, "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("a rejected write ran: %v", err)
	}
	us := h.client.updatesOf(id)
	if got := toolStatuses(us, "call_1"); !slices.Equal(got, []string{"pending", "failed"}) {
		t.Fatalf("rejected call statuses %v (%s)", got, describe(us))
	}
	if len(h.client.permReqs) != 1 {
		t.Fatalf("%d permission requests", len(h.client.permReqs))
	}
	req := h.client.permReqs[0]
	var kinds []string
	for _, o := range req.Options {
		kinds = append(kinds, string(o.Kind))
	}
	if string(req.ToolCall.ToolCallId) != "call_1" || req.ToolCall.Title == nil || *req.ToolCall.Title != "Write a.txt" ||
		!slices.Equal(kinds, []string{"allow_once", "allow_always", "reject_once", "reject_always"}) {
		t.Fatalf("permission request %+v kinds %v", req, kinds)
	}
	// The model read why.
	msgs, _ := json.Marshal(model.Requests()[1]["messages"])
	if !strings.Contains(string(msgs), "denied") {
		t.Fatalf("the model was not told: %s", msgs)
	}

	h.client.permission = func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse { return selectOption("allow_once") }
	h.mustPrompt(id, "write it again", sdk.StopReasonEndTurn)
	b, err := os.ReadFile(filepath.Join(h.dir, "a.txt"))
	if err != nil || string(b) != "second\n" {
		t.Fatalf("a.txt = %q, %v", b, err)
	}
	us = h.client.updatesOf(id)
	if got := toolStatuses(us, "call_2"); !slices.Equal(got, []string{"pending", "in_progress", "completed"}) {
		t.Fatalf("allowed call statuses %v", got)
	}
	// The completed card carries the diff.
	for _, u := range us {
		if u.ToolCallUpdate != nil && u.ToolCallUpdate.ToolCallId == "call_2" && u.ToolCallUpdate.Status != nil && *u.ToolCallUpdate.Status == "completed" {
			if len(u.ToolCallUpdate.Content) != 1 || u.ToolCallUpdate.Content[0].Diff == nil || u.ToolCallUpdate.Content[0].Diff.NewText != "second\n" {
				t.Fatalf("result content %+v", u.ToolCallUpdate.Content)
			}
		}
		if u.ToolCall != nil && u.ToolCall.ToolCallId == "call_2" {
			if u.ToolCall.Kind != sdk.ToolKindEdit || len(u.ToolCall.Locations) != 1 || u.ToolCall.Locations[0].Path != "a.txt" {
				t.Fatalf("call card %+v", u.ToolCall)
			}
		}
	}
}

func TestPermissionAlwaysPersistsForTheSession(t *testing.T) {
	model := acptest.New(
		acptest.Tool("c1", "bash", map[string]any{"command": "touch one", "description": "make one"}), acptest.Text("ok"),
		acptest.Tool("c2", "bash", map[string]any{"command": "touch one", "description": "make one"}), acptest.Text("ok"),
		writeCall("c3", "x.txt", "x"), acptest.Text("no"),
		writeCall("c4", "y.txt", "y"), acptest.Text("no again"),
	)
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.client.permission = func(r sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
		if *r.ToolCall.Kind == sdk.ToolKindExecute {
			return selectOption("allow_always")
		}
		return selectOption("reject_always")
	}
	for _, p := range []string{"one", "one again", "x", "y"} {
		h.mustPrompt(id, p, sdk.StopReasonEndTurn)
	}
	if n := len(h.client.permReqs); n != 2 {
		t.Fatalf("%d permission requests, want 2 (one per always answer)", n)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "one")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"x.txt", "y.txt"} {
		if _, err := os.Stat(filepath.Join(h.dir, f)); !os.IsNotExist(err) {
			t.Fatalf("%s written despite reject_always", f)
		}
	}
	us := h.client.updatesOf(id)
	if got := toolStatuses(us, "c2"); !slices.Equal(got, []string{"pending", "in_progress", "completed"}) {
		t.Fatalf("c2 %v", got)
	}
	if got := toolStatuses(us, "c4"); !slices.Equal(got, []string{"pending", "failed"}) {
		t.Fatalf("c4 %v", got)
	}
}

func TestCancelMidStream(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	model := acptest.New(acptest.Stall("partial", release), acptest.Text("after cancel"))
	defer model.Close()
	h := newHarness(t, model)
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	type result struct {
		r   sdk.PromptResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := h.prompt(id, "talk")
		done <- result{r, err}
	}()
	h.client.waitFor(t, id, func(u sdk.SessionUpdate) bool { return text(u) == "partial" })
	if err := h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || res.r.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("cancelled prompt: %+v %v", res.r, res.err)
	}
	// The session still works.
	h.mustPrompt(id, "again", sdk.StopReasonEndTurn)
	h.close()
	_, events := h.events(id)
	reasons := balanced(t, events)
	if !slices.Equal(reasons, []string{session.EndAborted, session.EndCompleted}) {
		t.Fatalf("turn ends %v", reasons)
	}
}

func TestCancelAnswersPendingPermissionAsReject(t *testing.T) {
	model := acptest.New(writeCall("w1", "never.txt", "x"))
	defer model.Close()
	h := newHarness(t, model)
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	asked := make(chan struct{})
	unblock := make(chan struct{})
	h.client.permission = func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
		close(asked)
		<-unblock // the user never answers
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}
	}
	done := make(chan sdk.PromptResponse, 1)
	go func() {
		r, _ := h.prompt(id, "write")
		done <- r
	}()
	<-asked
	_ = h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: id})
	r := <-done
	close(unblock)
	if r.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("stop %q", r.StopReason)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "never.txt")); !os.IsNotExist(err) {
		t.Fatal("the write ran after the cancel")
	}
	h.close()
	_, events := h.events(id)
	balanced(t, events)
	if !slices.ContainsFunc(events, func(e session.Event) bool {
		a, _ := session.Decode[session.ApprovalAnswer](e)
		return e.Type == session.TypeApprovalAnswer && !a.Allow
	}) {
		t.Fatal("no denied approval/answer in the log")
	}
}

func TestLoadReplaysHistory(t *testing.T) {
	model := acptest.New(
		writeCall("w1", "notes.txt", "hello\n"), acptest.Text("I wrote ", "notes.txt."),
	)
	defer model.Close()
	h := newHarness(t, model)
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.mustPrompt(id, "write notes", sdk.StopReasonEndTurn)
	live := h.client.updatesOf(id)
	h.restart()
	h.initialize(sdk.ClientCapabilities{})
	model.Push(acptest.Text("Second answer."))
	resp, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/load: %v", err)
	}
	if resp.Modes == nil || resp.Modes.CurrentModeId != "default" {
		t.Fatalf("load response %+v", resp)
	}
	replay := h.client.updatesOf(id)
	if len(replay) == 0 || replay[0].UserMessageChunk == nil || text(replay[0]) != "write notes" {
		t.Fatalf("replay starts with %s", describe(replay))
	}
	// The replay shows what the live stream left on the client's screen
	// (but the user's message and the live-only command list, title and
	// in-progress mark): each message whole, each call's card in its final
	// state, the last usage.
	shown := func(us []sdk.SessionUpdate) []string {
		var out []sdk.SessionUpdate
		cards := map[sdk.ToolCallId]*sdk.SessionUpdateToolCall{}
		var usage *sdk.SessionUpdate
		for _, u := range us {
			switch k := kind(u); {
			case k == "user_message_chunk" || k == "available_commands_update" || k == "session_info_update":
			case u.UsageUpdate != nil:
				usage = &u
			case u.ToolCall != nil:
				c := *u.ToolCall
				cards[c.ToolCallId] = &c
				out = append(out, sdk.SessionUpdate{ToolCall: &c})
			case u.ToolCallUpdate != nil:
				c, up := cards[u.ToolCallUpdate.ToolCallId], u.ToolCallUpdate
				if up.Status != nil {
					c.Status = *up.Status
				}
				if up.Title != nil {
					c.Title = *up.Title
				}
				if up.Content != nil {
					c.Content = up.Content
				}
			case u.AgentMessageChunk != nil && len(out) > 0 && out[len(out)-1].AgentMessageChunk != nil:
				last := out[len(out)-1].AgentMessageChunk
				out[len(out)-1] = sdk.UpdateAgentMessageText(last.Content.Text.Text + text(u))
			default:
				out = append(out, u)
			}
		}
		if usage != nil {
			out = append(out, *usage)
		}
		var s []string
		for _, u := range out {
			b, _ := json.Marshal(u)
			s = append(s, string(b))
		}
		return s
	}
	if a, b := shown(live), shown(replay); !slices.Equal(a, b) || len(b) != len(replay)-2 {
		t.Fatalf("live and replay differ:\nlive   %q\nreplay %q (%s)", a, b, describe(replay))
	}
	// Loading it again while it is live here replays it again.
	h.client.reset(id)
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("second session/load: %v", err)
	}
	if again := h.client.updatesOf(id); len(again) == 0 || text(again[0]) != "write notes" {
		t.Fatalf("second replay %s", describe(again))
	}
	// The loaded session continues with its history.
	h.client.reset(id)
	h.mustPrompt(id, "and now?", sdk.StopReasonEndTurn)
	if got := messageText(h.client.updatesOf(id)); got != "Second answer." {
		t.Fatalf("continued answer %q", got)
	}
	reqs := model.Requests()
	hist, _ := json.Marshal(reqs[len(reqs)-1]["messages"])
	if !strings.Contains(string(hist), "write notes") || !strings.Contains(string(hist), "I wrote notes.txt.") {
		t.Fatalf("history not continued: %s", hist)
	}
	h.close()
	_, events := h.events(id)
	if r := balanced(t, events); len(r) != 2 {
		t.Fatalf("turns %v", r)
	}
}

func TestLoadErrors(t *testing.T) {
	model := acptest.New(acptest.Text("hi"))
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	_, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: "no-such-session", Cwd: h.dir, McpServers: []sdk.McpServer{}})
	if err == nil || !strings.Contains(err.Error(), "unknown session") {
		t.Fatalf("unknown id: %v", err)
	}
	id := h.newSession()
	h.mustPrompt(id, "hi", sdk.StopReasonEndTurn)
	other := t.TempDir()
	h.restart()
	h.initialize(sdk.ClientCapabilities{})
	_, err = h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: other, McpServers: []sdk.McpServer{}})
	if err == nil || !strings.Contains(err.Error(), "cwd mismatch") {
		t.Fatalf("cwd mismatch: %v", err)
	}
}

func TestConcurrentSessionsAreIndependent(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	model := acptest.New()
	model.SetDefault(func(req map[string]any) acptest.Reply {
		msgs := req["messages"].([]any)
		last, _ := json.Marshal(msgs[len(msgs)-1])
		switch {
		case strings.Contains(string(last), "stall"):
			return acptest.Stall("A is thinking", release)
		case strings.Contains(string(last), "B"):
			return acptest.Text("answer ", "for B")
		}
		return acptest.Text("answer ", "for A")
	})
	defer model.Close()
	h := newHarness(t, model)
	h.initialize(sdk.ClientCapabilities{})
	a, b := h.newSession(), h.newSession()
	if a == b {
		t.Fatal("same session id twice")
	}
	var wg sync.WaitGroup
	results := make([]sdk.PromptResponse, 2)
	for i, id := range []sdk.SessionId{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = h.prompt(id, map[int]string{0: "question A", 1: "question B"}[i])
		}()
	}
	wg.Wait()
	if got := messageText(h.client.updatesOf(a)); got != "answer for A" {
		t.Fatalf("A got %q", got)
	}
	if got := messageText(h.client.updatesOf(b)); got != "answer for B" {
		t.Fatalf("B got %q", got)
	}
	// A stalls; B keeps working; cancelling A leaves B alone.
	h.client.reset(a)
	h.client.reset(b)
	doneA := make(chan sdk.PromptResponse, 1)
	go func() {
		r, _ := h.prompt(a, "stall please")
		doneA <- r
	}()
	h.client.waitFor(t, a, func(u sdk.SessionUpdate) bool { return text(u) == "A is thinking" })
	h.mustPrompt(b, "B again", sdk.StopReasonEndTurn)
	// A second prompt on a busy session is refused.
	if _, err := h.prompt(a, "A twice"); err == nil || !strings.Contains(err.Error(), "already in flight") {
		t.Fatalf("second prompt on a busy session: %v", err)
	}
	_ = h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: a})
	if r := <-doneA; r.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("A stop %q", r.StopReason)
	}
	h.mustPrompt(b, "B third", sdk.StopReasonEndTurn)
	once.Do(func() { close(release) })
	h.close()
	for _, id := range []sdk.SessionId{a, b} {
		_, events := h.events(id)
		balanced(t, events)
	}
}

func TestDisconnectDisposesAndFlushes(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	model := acptest.New(acptest.Text("idle now"), acptest.Stall("working", release))
	defer model.Close()
	h := newHarness(t, model)
	h.initialize(sdk.ClientCapabilities{})
	idle := h.newSession()
	h.mustPrompt(idle, "quick one", sdk.StopReasonEndTurn)
	id := h.newSession()
	go func() { _, _ = h.prompt(id, "long job") }()
	h.client.waitFor(t, id, func(u sdk.SessionUpdate) bool { return text(u) == "working" })
	h.close() // the editor goes away mid-turn
	_, events := h.events(id)
	if r := balanced(t, events); !slices.Equal(r, []string{session.EndDisposed}) {
		t.Fatalf("turn ends %v", r)
	}
	if _, ev := h.events(idle); !slices.Equal(balanced(t, ev), []string{session.EndCompleted}) {
		t.Fatalf("idle session log %v", ev)
	}
}

func TestRequestErrors(t *testing.T) {
	model := acptest.New()
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	if _, err := h.prompt("nope", "hi"); err == nil || !strings.Contains(err.Error(), "unknown session: nope") {
		t.Fatalf("unknown session: %v", err)
	}
	if _, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: "relative/dir", McpServers: []sdk.McpServer{}}); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Fatalf("relative cwd: %v", err)
	}
	id := h.newSession()
	if _, err := h.prompt(id, "   "); err == nil || !strings.Contains(err.Error(), "empty prompt") {
		t.Fatalf("empty prompt: %v", err)
	}
	_, err := h.conn.Prompt(h.ctx(), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.AudioBlock("AAAA", "audio/wav")}})
	if err == nil || !strings.Contains(err.Error(), "audio") {
		t.Fatalf("audio: %v", err)
	}
	if _, err := h.conn.SetSessionMode(h.ctx(), sdk.SetSessionModeRequest{SessionId: id, ModeId: "yolo"}); err == nil {
		t.Fatal("unknown mode accepted")
	}
	if _, err := h.conn.Authenticate(h.ctx(), sdk.AuthenticateRequest{MethodId: "x"}); err == nil {
		t.Fatal("unknown auth method accepted")
	}
	// Cancelling an unknown session is a silent no-op.
	if err := h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: "nope"}); err != nil {
		t.Fatal(err)
	}
}

func TestModesModelsAndConfigOptions(t *testing.T) {
	model := acptest.New(writeCall("w1", "m.txt", "auto"), acptest.Text("done"))
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	r, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	id := r.SessionId
	var modes []string
	for _, m := range r.Modes.AvailableModes {
		modes = append(modes, string(m.Id))
	}
	if !slices.Equal(modes, []string{"default", "acceptEdits", "plan", "bypassPermissions"}) || r.Modes.CurrentModeId != "default" {
		t.Fatalf("modes %+v", r.Modes)
	}
	if r.Models == nil || r.Models.CurrentModelId != acptest.Model || len(r.ConfigOptions) != 3 {
		t.Fatalf("models %+v config %+v", r.Models, r.ConfigOptions)
	}
	// The sandbox option: this test binary runs no sandbox helper, so it
	// says the mode is not enforced (the e2e test sees it enforced).
	if sb := r.ConfigOptions[2].Select; sb == nil || sb.Id != "sandbox" || sb.CurrentValue != "workspace-write" ||
		sb.Meta["enforcing"] != false || sb.Description == nil || !strings.Contains(*sb.Description, "NOT enforced") {
		t.Fatalf("sandbox option %+v", r.ConfigOptions[2].Select)
	}
	if _, err := h.conn.SetSessionMode(h.ctx(), sdk.SetSessionModeRequest{SessionId: id, ModeId: "acceptEdits"}); err != nil {
		t.Fatal(err)
	}
	h.client.waitFor(t, id, func(u sdk.SessionUpdate) bool {
		return u.CurrentModeUpdate != nil && u.CurrentModeUpdate.CurrentModeId == "acceptEdits"
	})
	// acceptEdits: the write runs without a permission request.
	h.mustPrompt(id, "write m", sdk.StopReasonEndTurn)
	if len(h.client.permReqs) != 0 {
		t.Fatalf("asked in acceptEdits: %+v", h.client.permReqs)
	}
	if b, _ := os.ReadFile(filepath.Join(h.dir, "m.txt")); string(b) != "auto" {
		t.Fatalf("m.txt %q", b)
	}
	// Model selection through the config option and session/set_model.
	co, err := h.conn.SetSessionConfigOption(h.ctx(), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
		SessionId: id, ConfigId: "model", Value: "deepseek/deepseek-reasoner"}})
	if err != nil {
		t.Fatal(err)
	}
	if co.ConfigOptions[1].Select.CurrentValue != "deepseek/deepseek-reasoner" {
		t.Fatalf("config options %+v", co.ConfigOptions[1].Select)
	}
	model.Push(acptest.Text("reasoned"))
	h.mustPrompt(id, "think", sdk.StopReasonEndTurn)
	reqs := model.Requests()
	if got := reqs[len(reqs)-1]["model"]; got != "deepseek-reasoner" {
		t.Fatalf("request model %v", got)
	}
	if _, err := h.conn.UnstableSetSessionModel(h.ctx(), sdk.UnstableSetSessionModelRequest{SessionId: id, ModelId: "deepseek/deepseek-chat"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.UnstableSetSessionModel(h.ctx(), sdk.UnstableSetSessionModelRequest{SessionId: id, ModelId: "nope/none"}); err == nil {
		t.Fatal("unknown model accepted")
	}
}

func TestListAndCloseSessions(t *testing.T) {
	model := acptest.New(acptest.Text("one"), acptest.Text("two"))
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	a := h.newSession()
	h.mustPrompt(a, "first session", sdk.StopReasonEndTurn)
	b := h.newSession()
	h.mustPrompt(b, "second session", sdk.StopReasonEndTurn)
	if _, err := h.conn.CloseSession(h.ctx(), sdk.CloseSessionRequest{SessionId: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.prompt(a, "closed?"); err == nil {
		t.Fatal("prompt on a closed session")
	}
	// Closed sessions are flushed: listing shows both, newest first.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ls, err := h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{Cwd: &h.dir})
		if err != nil {
			t.Fatal(err)
		}
		var titles []string
		for _, s := range ls.Sessions {
			if s.Title != nil {
				titles = append(titles, *s.Title)
			}
		}
		if slices.Contains(titles, "first session") && len(ls.Sessions) == 2 {
			if ls.Sessions[0].Cwd != h.dir || ls.Sessions[0].UpdatedAt == nil {
				t.Fatalf("list %+v", ls.Sessions)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list %+v", ls.Sessions)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A closed session can be loaded again.
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: a, Cwd: h.dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
}

func TestCompactCommand(t *testing.T) {
	model := acptest.New(acptest.Text("a long answer"))
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.mustPrompt(id, "hello", sdk.StopReasonEndTurn)
	h.client.reset(id)
	model.Push(acptest.Text("Summary: the user said hello."))
	h.mustPrompt(id, "/compact", sdk.StopReasonEndTurn)
	if got := messageText(h.client.updatesOf(id)); !strings.Contains(got, "ompact") && !strings.Contains(got, "Nothing") {
		t.Fatalf("compact said %q", got)
	}
}

func TestClientFilesystemAndTerminal(t *testing.T) {
	model := acptest.New(
		acptest.Tool("r1", "read", map[string]any{"file_path": "buf.txt"}),
		acptest.Tool("e1", "edit", map[string]any{"file_path": "buf.txt", "old_string": "unsaved", "new_string": "edited"}),
		acptest.Tool("b1", "bash", map[string]any{"command": "echo from-terminal > t.txt; echo printed", "description": "write t"}),
		acptest.Text("done"),
	)
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true})
	path := filepath.Join(h.dir, "buf.txt")
	if err := os.WriteFile(path, []byte("saved text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.client.files = map[string]string{path: "unsaved text\n"} // the editor's buffer differs from disk
	id := h.newSession()
	h.mustPrompt(id, "edit the buffer", sdk.StopReasonEndTurn)
	if len(h.client.writes) != 1 || h.client.writes[0].Content != "edited text\n" || h.client.writes[0].Path != path {
		t.Fatalf("client writes %+v", h.client.writes)
	}
	// The model read the buffer, not the disk.
	msgs, _ := json.Marshal(model.Requests()[1]["messages"])
	if !strings.Contains(string(msgs), "unsaved text") {
		t.Fatalf("read did not see the buffer: %s", msgs)
	}
	if len(h.client.termReqs) != 1 || h.client.termReqs[0].Command != "bash" {
		t.Fatalf("terminal requests %+v", h.client.termReqs)
	}
	if b, _ := os.ReadFile(filepath.Join(h.dir, "t.txt")); string(b) != "from-terminal\n" {
		t.Fatalf("t.txt %q", b)
	}
	msgs, _ = json.Marshal(model.Requests()[3]["messages"])
	if !strings.Contains(string(msgs), "printed") {
		t.Fatalf("terminal output did not reach the model: %s", msgs)
	}
	var embedded bool
	for _, u := range h.client.updatesOf(id) {
		if u.ToolCallUpdate != nil && u.ToolCallUpdate.ToolCallId == "b1" {
			for _, c := range u.ToolCallUpdate.Content {
				if c.Terminal != nil && c.Terminal.TerminalId == "term-1" {
					embedded = true
				}
			}
		}
	}
	if !embedded {
		t.Fatalf("terminal not embedded in the card: %s", describe(h.client.updatesOf(id)))
	}
}

func TestStopReasons(t *testing.T) {
	model := acptest.New(
		acptest.Reply{acptest.TextDelta("cut"), acptest.Finish("length")},
		acptest.Reply{acptest.TextDelta("I can't"), acptest.Finish("content_filter")},
	)
	defer model.Close()
	// No retries: the exhausted script fails the turn at once.
	zero := 0
	h := newHarness(t, model, withSettings(t, providers.ProvidersKey.In(settings.LayerUser, "settings.json", map[string]providers.ProviderConfig{"deepseek": {MaxRetries: &zero}})))
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.mustPrompt(id, "long", sdk.StopReasonMaxTokens)
	h.mustPrompt(id, "bad", sdk.StopReasonRefusal)
	_, err := h.prompt(id, "fails") // the model server has nothing left: HTTP 500
	if err == nil || !strings.Contains(err.Error(), "turn failed") {
		t.Fatalf("failed turn: %v", err)
	}
	h.client.reset(id)
	model.Push(acptest.Text("recovered"))
	h.mustPrompt(id, "again", sdk.StopReasonEndTurn)
}

func TestPlanFromTodoWrite(t *testing.T) {
	model := acptest.New(
		acptest.Tool("t1", "todo_write", map[string]any{"todos": []map[string]string{
			{"content": "read the code", "status": "completed"},
			{"content": "fix the bug", "status": "in_progress"},
			{"content": "run the tests", "status": "pending"},
		}}),
		acptest.Text("planned"),
	)
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.mustPrompt(id, "plan it", sdk.StopReasonEndTurn)
	var plan *sdk.SessionUpdatePlan
	for _, u := range h.client.updatesOf(id) {
		if u.Plan != nil {
			plan = u.Plan
		}
	}
	if plan == nil || len(plan.Entries) != 3 || plan.Entries[1].Content != "fix the bug" || plan.Entries[1].Status != sdk.PlanEntryStatusInProgress {
		t.Fatalf("plan %+v in %s", plan, describe(h.client.updatesOf(id)))
	}
	// todo_write needs no permission.
	if len(h.client.permReqs) != 0 {
		t.Fatalf("asked: %+v", h.client.permReqs)
	}
}

// TestModesArePerSession: two sessions of one workspace share a permission
// checker, but set_mode on one changes only that session's mode, its
// updates and its calls.
func TestModesArePerSession(t *testing.T) {
	model := acptest.New(writeCall("w1", "a.txt", "A"), acptest.Text("done"), writeCall("w2", "b.txt", "B"), acptest.Text("done"))
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	a, b := h.newSession(), h.newSession()
	if _, err := h.conn.SetSessionMode(h.ctx(), sdk.SetSessionModeRequest{SessionId: a, ModeId: "acceptEdits"}); err != nil {
		t.Fatal(err)
	}
	h.client.waitFor(t, a, func(u sdk.SessionUpdate) bool {
		return u.CurrentModeUpdate != nil && u.CurrentModeUpdate.CurrentModeId == "acceptEdits"
	})
	h.mustPrompt(a, "write a", sdk.StopReasonEndTurn)
	if len(h.client.permReqs) != 0 {
		t.Fatalf("asked in acceptEdits: %+v", h.client.permReqs)
	}
	h.mustPrompt(b, "write b", sdk.StopReasonEndTurn)
	if len(h.client.permReqs) != 1 || h.client.permReqs[0].SessionId != b {
		t.Fatalf("the default-mode session's write: permission requests %+v, want one for %s", h.client.permReqs, b)
	}
	for _, u := range h.client.updatesOf(b) {
		if u.CurrentModeUpdate != nil || u.ConfigOptionUpdate != nil {
			t.Fatalf("session %s was told of another session's mode: %s", b, describe([]sdk.SessionUpdate{u}))
		}
	}
	// A session loaded later starts from the workspace's mode, not a's.
	r, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Modes == nil || r.Modes.CurrentModeId != "default" {
		t.Fatalf("a new session's modes: %+v", r.Modes)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(h.dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

// TestSQLiteStore: with "sessionStore": "sqlite" in the user's settings,
// sessions started in the editor live in $DSH_HOME/sessions.db, and a new
// server lists and loads them from there.
func TestSQLiteStore(t *testing.T) {
	model := acptest.New(acptest.Text("noted"))
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	if err := os.WriteFile(filepath.Join(h.home, "settings.json"), []byte(`{"sessionStore":"sqlite"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.mustPrompt(id, "remember kumquat", sdk.StopReasonEndTurn)
	h.restart()
	h.initialize(sdk.ClientCapabilities{})
	if _, err := os.Stat(filepath.Join(h.home, "sessions.db")); err != nil {
		t.Fatalf("no SQLite store: %v", err)
	}
	ls, err := h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{Cwd: &h.dir})
	if err != nil || len(ls.Sessions) != 1 || ls.Sessions[0].SessionId != id {
		t.Fatalf("list: %+v %v", ls.Sessions, err)
	}
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	replay := h.client.updatesOf(id)
	if len(replay) == 0 || replay[0].UserMessageChunk == nil || text(replay[0]) != "remember kumquat" {
		t.Fatalf("replay starts with %s", describe(replay))
	}
}

// TestUntrustedProjectSettingsIgnored: without user settings, an untrusted
// project's settings file must not take effect through the merged whole
// (its system prompt, model, providers, env) once its layers are dropped.
func TestUntrustedProjectSettingsIgnored(t *testing.T) {
	model := acptest.New(acptest.Text("hello"))
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	if err := os.MkdirAll(filepath.Join(h.dir, ".dsh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dir, ".dsh", "settings.json"), []byte(`{"appendSystemPrompt":"UNTRUSTED-PROJECT-PROMPT"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.mustPrompt(id, "hi", sdk.StopReasonEndTurn)
	reqs := model.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	body, _ := json.Marshal(reqs[0])
	if strings.Contains(string(body), "UNTRUSTED-PROJECT-PROMPT") {
		t.Fatalf("an untrusted project's settings reached the model request: %.300s", body)
	}
}

// Usage updates carry the session's running cost from the price table
// (here the "pricing" settings' override), history included after a load.
func TestUsageUpdateCost(t *testing.T) {
	model := acptest.New(acptest.Text("one"), acptest.Text("two"), acptest.Text("three"))
	defer model.Close()
	prices := map[string]pricing.Setting{acptest.Model: {Input: 1, Output: 2}} // per million tokens
	priced := withSettings(t, pricing.Key.In(settings.LayerUser, "settings.json", prices))
	h := newHarness(t, model, priced)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	costs := func() []float64 {
		var out []float64
		for _, u := range h.client.updatesOf(id) {
			if u.UsageUpdate != nil {
				if u.UsageUpdate.Cost == nil || u.UsageUpdate.Cost.Currency != "USD" {
					t.Fatalf("usage update without a cost in USD: %+v", u.UsageUpdate)
				}
				out = append(out, u.UsageUpdate.Cost.Amount)
			}
		}
		return out
	}
	// Each scripted reply uses 100 prompt and 10 completion tokens: 120e-6 USD.
	near := func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
	h.mustPrompt(id, "a", sdk.StopReasonEndTurn)
	h.mustPrompt(id, "b", sdk.StopReasonEndTurn)
	if c := costs(); len(c) != 2 || !near(c[0], 120e-6) || !near(c[1], 240e-6) {
		t.Fatalf("costs %v", c)
	}
	h.close()
	h.start(priced)
	h.initialize(sdk.ClientCapabilities{})
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	h.client.reset(id)
	h.mustPrompt(id, "c", sdk.StopReasonEndTurn)
	if c := costs(); len(c) != 1 || !near(c[0], 360e-6) {
		t.Fatalf("cost after load %v (want the history's included)", c)
	}
}

// A long history's cost is summed in the background after session/load
// answers: the replay's usage update leaves the cost out (unknown, not
// zero) and a later one carries the whole session's, the same as a full
// replay's.
func TestLoadSumsHistoryCostInBackground(t *testing.T) {
	notes := strings.Repeat("a line of notes long enough to be worth summarizing\n", 40)
	model := acptest.New(acptest.Text(notes), acptest.Text("Second."+strings.Repeat(" filler", 150)),
		acptest.Text("Goal: notes."), acptest.Text("After."))
	defer model.Close()
	h := newHarness(t, model)
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	for _, p := range []string{"first", "second", "/compact", "third"} {
		h.mustPrompt(id, p, sdk.StopReasonEndTurn)
	}
	h.restart()
	h.initialize(sdk.ClientCapabilities{})
	cost := func(full bool) (first, last *sdk.Cost) {
		t.Helper()
		h.client.reset(id)
		req := sdk.LoadSessionRequest{SessionId: id, Cwd: h.dir, McpServers: []sdk.McpServer{}}
		if full {
			req.Meta = map[string]any{"dsh": map[string]any{"replay": "full"}}
		}
		if _, err := h.conn.LoadSession(h.ctx(), req); err != nil {
			t.Fatal(err)
		}
		var usage []*sdk.SessionUsageUpdate
		for _, u := range h.client.updatesOf(id) {
			if u.UsageUpdate != nil {
				usage = append(usage, u.UsageUpdate)
			}
		}
		// The background sum's may have come already.
		if len(usage) != 1 && (full || len(usage) != 2) {
			t.Fatalf("the replay sent %d usage updates: %s", len(usage), describe(h.client.updatesOf(id)))
		}
		first = usage[0].Cost
		if !full {
			h.client.waitFor(t, id, func(u sdk.SessionUpdate) bool { return u.UsageUpdate != nil && u.UsageUpdate.Cost != nil })
			for _, u := range h.client.updatesOf(id) {
				if u.UsageUpdate != nil {
					last = u.UsageUpdate.Cost
				}
			}
		}
		return first, last
	}
	defer acp.SetSyncAccountBelow(0)()
	first, last := cost(false)
	if first != nil || last == nil || last.Amount <= 0 {
		t.Fatalf("since the compaction: the replay's cost %+v, the later one %+v", first, last)
	}
	if _, err := h.conn.CloseSession(h.ctx(), sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	whole, _ := cost(true)
	if whole == nil || whole.Amount != last.Amount {
		t.Fatalf("full replay's cost %+v, the background sum %+v", whole, last)
	}
	h.close()
}
