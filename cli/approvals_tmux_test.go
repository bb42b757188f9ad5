package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// promptModel is a loopback OpenAI-compatible model scripted by the last
// user prompt: a prompt containing one of the keys gets that reply (a tool
// call, or text); after a tool result the model says "Finished: <prompt>".
// Every request's messages are recorded. A reply may hold its stream open
// until the client goes away (hold), to be interrupted.
type promptModel struct {
	mu       sync.Mutex
	script   []promptStep
	requests []chatRequest
}

type promptStep struct {
	key string
	// call is a bash command to run; text a reply to stream; plan a plan
	// to present with exit_plan_mode.
	call, text, plan string
	// tool and args are any other tool call.
	tool string
	args map[string]string
	// hold keeps the stream open after text until the request is cancelled.
	hold bool
	// tooLong refuses the request as too long for the context window
	// (HTTP 400, context_length_exceeded, as OpenAI answers) until the
	// history holds a compaction's checkpoint, or always with tooLongAlways.
	tooLong, tooLongAlways bool
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// text is the message's content as plain text (a string, or the text parts).
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

type chatRequest struct {
	Messages []chatMessage `json:"messages"`
}

func newPromptModel(t *testing.T, steps ...promptStep) (*promptModel, *httptest.Server) {
	m := &promptModel{script: steps}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv
}

func (m *promptModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var req chatRequest
	_ = json.Unmarshal(b, &req)
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	lastUser, lastRole := "", ""
	for _, msg := range req.Messages {
		lastRole = msg.Role
		if msg.Role == "user" {
			lastUser = msg.text()
		}
	}
	var events []string
	text := func(s string) {
		events = append(events, fmt.Sprintf(`{"choices":[{"index":0,"delta":{"role":"assistant","content":%q},"finish_reason":null}]}`, s))
	}
	stop := func(reason string) {
		events = append(events, fmt.Sprintf(`{"choices":[{"index":0,"delta":{},"finish_reason":%q}],"usage":{"prompt_tokens":900,"completion_tokens":20}}`, reason))
	}
	var step *promptStep
	for i := range m.script {
		if strings.Contains(lastUser, m.script[i].key) {
			step = &m.script[i]
			break
		}
	}
	if step != nil && lastRole == "user" && (step.tooLongAlways || step.tooLong && !strings.Contains(string(b), "compacted-summary")) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
		return
	}
	switch {
	case lastRole == "tool" || step == nil:
		text("Finished: " + lastUser)
		stop("stop")
	case step.plan != "" || step.tool != "":
		name, a := step.tool, step.args
		if step.plan != "" {
			name, a = "exit_plan_mode", map[string]string{"plan": step.plan}
		}
		args, _ := json.Marshal(a)
		events = append(events, fmt.Sprintf(`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%q}}]},"finish_reason":null}]}`, len(m.requests), name, args))
		stop("tool_calls")
	case step.call != "":
		args, _ := json.Marshal(map[string]string{"command": step.call, "description": "Scripted: " + step.key})
		events = append(events, fmt.Sprintf(`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":"bash","arguments":%q}}]},"finish_reason":null}]}`, len(m.requests), args))
		stop("tool_calls")
	default:
		text(step.text)
		if !step.hold {
			stop("stop")
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	var body strings.Builder
	for _, e := range events {
		fmt.Fprintf(&body, "data: %s\n\n", e)
	}
	if step != nil && step.hold && lastRole != "tool" {
		_, _ = io.WriteString(w, body.String())
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	body.WriteString("data: [DONE]\n\n")
	_, _ = io.WriteString(w, body.String()) // one write: no Nagle delay
}

// last is the newest request.
func (m *promptModel) last() chatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) == 0 {
		return chatRequest{}
	}
	return m.requests[len(m.requests)-1]
}

// unconfined settings run commands outside the kernel sandbox: inside an
// enforcing one, a command no rule allows runs without asking (see
// permission.Sandboxed), and these tests are about the questions.
const unconfined = `,"sandbox":{"mode":"danger-full-access"}`

// termProject is a project directory, a DSH_HOME whose settings point at
// srv (plus extra top-level settings keys), and the binary.
type termProject struct {
	bin, dir, home string
}

func newTermProject(t *testing.T, srv *httptest.Server, extra string) termProject {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	dir, home := t.TempDir(), t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	settings := fmt.Sprintf(`{"providers":{"local":{"type":"openai","baseURL":%q,"models":[{"id":"m"}]}}%s}`, srv.URL+"/v1", extra)
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	return termProject{bin: buildDsh(t), dir: dir, home: home}
}

func (s termProject) start(t *testing.T, args ...string) *tmuxTerm {
	t.Helper()
	tt := startTmux(t, s.bin, s.dir, s.home, append([]string{"--model", "local/m", "--trust"}, args...)...)
	tt.waitFor("local/m", "›", "default mode")
	return tt
}

// idle waits for the prompt with no turn running.
func (tt *tmuxTerm) idle() {
	tt.t.Helper()
	tt.waitUntil(func(s string) bool {
		tail := lastLines(s, 2)
		return strings.Contains(tail, "›") && !strings.Contains(tail, "to interrupt")
	}, "the idle prompt")
}

// prompt types a line and sends it.
func (tt *tmuxTerm) prompt(s string) {
	tt.t.Helper()
	tt.text(s)
	tt.keys("Enter")
}

func (tt *tmuxTerm) exit() {
	tt.t.Helper()
	tt.idle()
	tt.prompt("/exit")
	tt.waitFor("DSH-EXITED:0")
}

// A prefix rule chosen in the approval ("allow for this session", shown
// before choosing) lets the next matching command run without asking,
// and a different command still asks; "always in this project" lands in
// .dsh/settings.local.json, shows in /permissions with its file, and
// holds after a restart.
func TestApprovalRulesInTmux(t *testing.T) {
	_, srv := newPromptModel(t,
		promptStep{key: "log one", call: "git log --oneline -1"},
		promptStep{key: "log two", call: "git log --oneline -2"},
		promptStep{key: "show status", call: "git status --short"},
		promptStep{key: "list files", call: "ls -la"},
	)
	s := newTermProject(t, srv, unconfined)
	tt := s.start(t)
	tt.prompt("log one")
	tt.waitFor("? Allow Bash git log --oneline -1", "rule: Bash(git log:*)", "[a] allow for this session", "[p] always in this project")
	tt.keys("a")
	tt.waitFor("Finished: log one")
	tt.idle()
	tt.prompt("log two")
	scr := tt.waitFor("Finished: log two")
	if strings.Contains(scr, "Allow Bash git log --oneline -2") {
		t.Fatalf("the session rule Bash(git log:*) did not cover git log --oneline -2:\n%s", scr)
	}
	tt.idle()
	tt.prompt("list files")
	tt.waitFor("? Allow Bash ls -la", "rule: Bash(ls:*)")
	tt.keys("y")
	tt.waitFor("Finished: list files")
	tt.idle()

	tt.prompt("show status")
	tt.waitFor("? Allow Bash git status --short", "rule: Bash(git status:*)")
	tt.keys("p")
	tt.waitFor("saved to ", ".dsh/settings.local.json: Bash(git status:*)", "Finished: show status")
	local := filepath.Join(s.dir, ".dsh", "settings.local.json")
	if b, err := os.ReadFile(local); err != nil || !strings.Contains(string(b), `"Bash(git status:*)"`) {
		t.Fatalf("settings.local.json: %s %v", b, err)
	}
	tt.idle()
	tt.prompt("/permissions")
	tt.waitFor("Bash(git status:*)  (", ".dsh/settings.local.json)", "Bash(git log:*)  (session)")
	tt.exit()

	// A new process: the project rule holds, the session rule is gone.
	tt = s.start(t)
	tt.prompt("show status again")
	scr = tt.waitFor("Finished: show status again")
	if strings.Contains(scr, "? Allow Bash git status") {
		t.Fatalf("the project rule did not survive the restart:\n%s", scr)
	}
	tt.idle()
	tt.prompt("log one more")
	tt.waitFor("? Allow Bash git log --oneline -1", "[y] allow once")
	tt.keys("y")
	tt.waitFor("Finished: log one more")
	tt.exit()
}

// A 500-character command is visible whole in its approval, wrapped.
func TestApprovalLongCommandInTmux(t *testing.T) {
	var words []string
	for i := 0; len(strings.Join(words, " ")) < 500; i++ {
		words = append(words, fmt.Sprintf("w%03d", i))
	}
	cmd := "printf '%s\\n' " + strings.Join(words, " ") + " THEEND > words.txt"
	_, srv := newPromptModel(t, promptStep{key: "long one", call: cmd})
	s := newTermProject(t, srv, unconfined)
	tt := s.start(t)
	tt.prompt("long one")
	scr := tt.waitFor("? Allow Bash printf '%s\\n' w000", "THEEND", "words.txt", "[y] allow once")
	// The preview rows (after "│") hold every word, none cut.
	var preview strings.Builder
	for _, l := range strings.Split(scr, "\n") {
		if _, rest, ok := strings.Cut(l, "│ "); ok {
			preview.WriteString(rest + " ")
		}
	}
	for _, w := range append(words, "THEEND", "words.txt") {
		if !strings.Contains(" "+preview.String(), " "+w+" ") {
			t.Fatalf("%s of the command is not in the approval's preview:\n%s", w, scr)
		}
	}
	if strings.Contains(preview.String(), "…") {
		t.Fatalf("the approval cuts the command:\n%s", scr)
	}
	tt.keys("y")
	tt.waitFor("Finished: long one")
	tt.exit()
}

// Shift-tab cycles default → acceptEdits → plan and asks before
// bypassPermissions; anything but y goes back to default; settings that
// disable bypassPermissions skip the question.
func TestShiftTabBypassInTmux(t *testing.T) {
	_, srv := newPromptModel(t)
	s := newTermProject(t, srv, "")
	tt := s.start(t)
	footer := func(want string) {
		t.Helper()
		tt.waitUntil(func(s string) bool { return strings.Contains(lastLines(s, 1), want) }, "the footer to say "+want)
	}
	tt.keys("BTab")
	footer("⏵⏵ accept edits")
	tt.keys("BTab")
	footer("⏸ plan mode")
	tt.keys("BTab")
	tt.waitFor("Switch to bypassPermissions?", "[y] switch to bypassPermissions")
	if strings.Contains(lastLines(tt.screen(), 1), "bypass permissions") {
		t.Fatal("bypass reached before the confirmation")
	}
	tt.keys("n")
	footer("default mode")
	tt.keys("BTab", "BTab", "BTab")
	tt.waitFor("Switch to bypassPermissions?")
	tt.keys("y")
	footer("⚠ bypass permissions")
	tt.keys("BTab")
	footer("default mode")
	tt.exit()

	s = newTermProject(t, srv, `,"permissions":{"disableBypassPermissionsMode":"disable"}`)
	tt = s.start(t)
	tt.keys("BTab", "BTab")
	footer("⏸ plan mode")
	tt.keys("BTab")
	footer("default mode")
	if strings.Contains(tt.screen(), "Switch to bypassPermissions?") {
		t.Fatal("asked to switch to bypassPermissions although settings disable it")
	}
	tt.exit()
}

// A denial's reason reaches the model as the user's denial, not an error,
// and the card says Denied.
func TestDenialReachesModelInTmux(t *testing.T) {
	m, srv := newPromptModel(t, promptStep{key: "clean up", call: "rm -rf build"})
	s := newTermProject(t, srv, unconfined)
	tt := s.start(t)
	tt.prompt("clean up")
	tt.waitFor("? Allow Bash rm -rf build", "[n] deny")
	tt.keys("n")
	tt.waitFor("Why not?")
	tt.text("use the trash instead")
	tt.keys("Enter")
	tt.waitFor("Denied", "reason: use the trash instead", "Finished: clean up")
	var got *chatMessage
	for _, msg := range m.last().Messages {
		if msg.Role == "tool" {
			got = &msg
		}
	}
	if got == nil || got.text() != "The user denied this tool call: use the trash instead" {
		t.Fatalf("the model read the denial as %+v", got)
	}
	if strings.Contains(tt.screen(), "Error") {
		t.Fatalf("the denial is shown as an error:\n%s", tt.screen())
	}
	tt.exit()
}

// An interrupted answer's text and the "[interrupted by the user]" marker
// reach the next request, in order, before the next prompt.
func TestInterruptedAnswerInTmux(t *testing.T) {
	m, srv := newPromptModel(t, promptStep{key: "talk slowly", text: "Here is the first half of my answer", hold: true})
	s := newTermProject(t, srv, "")
	tt := s.start(t)
	tt.prompt("talk slowly")
	tt.waitFor("Here is the first half of my answer", "esc or ctrl-c to interrupt")
	tt.keys("Escape")
	tt.waitFor("⏹ Interrupted")
	tt.idle()
	tt.prompt("carry on")
	tt.waitFor("Finished: carry on")
	interruptedInRequest(t, m)
	tt.exit()
}

// A running command's card streams its output with the time it has run;
// afterwards the card is cut to its tail, and the transcript view (ctrl-o)
// expands it, pages and searches.
func TestLiveOutputAndTranscriptInTmux(t *testing.T) {
	cmd := "echo tick-1; while [ ! -e go.flag ]; do sleep 0.05; done; for i in $(seq 2 40); do echo tick-$i; done"
	_, srv := newPromptModel(t, promptStep{key: "count slowly", call: cmd})
	s := newTermProject(t, srv, `,"permissions":{"allow":["Bash"]}`)
	tt := s.start(t)
	tt.prompt("count slowly")
	scr := tt.waitFor("Bash echo tick-1", "running", "tick-1")
	if strings.Contains(scr, "waited") || strings.Contains(scr, "tick-2") {
		t.Fatalf("unexpected live card:\n%s", scr)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "go.flag"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	scr = tt.waitFor("Finished: count slowly", "tick-40", "… +32 lines (ctrl-o to expand)")
	if hasLine(scr, "tick-12") {
		t.Fatalf("the finished card is not cut to its tail:\n%s", scr)
	}
	tt.idle()
	tt.keys("C-o")
	scr = tt.waitFor("✻ Transcript", "› count slowly", "… +32 lines", "enter expand")
	tt.keys("Enter")
	scr = tt.waitUntil(func(s string) bool { return hasLine(s, "tick-12") && hasLine(s, "tick-2") }, "the expanded card")
	if strings.Contains(scr, "+32 lines") {
		t.Fatalf("the card did not expand:\n%s", scr)
	}
	// Paging: the end of the transcript, then back to its top.
	tt.keys("G")
	tt.waitFor("Finished: count slowly")
	tt.keys("PPage", "PPage", "g")
	tt.waitUntil(func(s string) bool { return strings.Contains(s, "rows 1–") && hasLine(s, "tick-1") }, "the top of the transcript")
	// Search: from the top, every match in turn, wrapping around.
	tt.keys("/")
	tt.text("count slowly")
	tt.keys("Enter")
	tt.waitFor("match 1 of 2 for \"count slowly\"")
	tt.keys("n")
	tt.waitFor("match 2 of 2")
	tt.keys("n")
	tt.waitFor("match 1 of 2")
	tt.keys("/")
	tt.text("tick-37")
	tt.keys("Enter")
	scr = tt.waitFor("match 1 of 1 for \"tick-37\"")
	if !hasLine(scr, "[tick-37]") && !strings.Contains(scr, "tick-37") {
		t.Fatalf("the match is not on screen:\n%s", scr)
	}
	tt.keys("/")
	tt.text("no-such-words")
	tt.keys("Enter")
	tt.waitFor("no match for \"no-such-words\"")
	// Enter again collapses it; q leaves the view and the prompt is back.
	tt.keys("Enter")
	tt.waitFor("… +32 lines")
	tt.keys("q")
	tt.waitUntil(func(s string) bool {
		return !strings.Contains(s, "✻ Transcript") && strings.Contains(s, "Finished: count slowly") && strings.Contains(lastLines(s, 2), "›")
	}, "the inline screen back")
	tt.exit()
}

// hasLine reports whether a screen has a line whose last word is w.
func hasLine(screen, w string) bool {
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[len(f)-1] == w {
			return true
		}
	}
	return false
}

// Quitting (ctrl-d) while the model is still answering keeps what the user
// already saw: the resumed session's next request holds the partial answer
// and the interrupt marker, as if the turn had been interrupted first.
func TestExitWhileStreamingKeepsTheAnswerInTmux(t *testing.T) {
	m, srv := newPromptModel(t, promptStep{key: "talk slowly", text: "Here is the first half of my answer", hold: true})
	s := newTermProject(t, srv, "")
	tt := s.start(t)
	tt.prompt("talk slowly")
	tt.waitFor("Here is the first half of my answer", "esc or ctrl-c to interrupt")
	tt.keys("C-d")
	tt.waitFor("DSH-EXITED:0", "Resume it with: dsh --resume")
	tt = s.start(t, "-c")
	tt.prompt("carry on")
	tt.waitFor("Finished: carry on")
	interruptedInRequest(t, m)
	tt.exit()
}

// interruptedInRequest checks that the model's latest request holds, in
// order, the prompt "talk slowly", the partial answer the user saw, the
// interrupt marker and then "carry on" — what an interrupted (or quit)
// turn must leave for the model.
func interruptedInRequest(t *testing.T, m *promptModel) {
	t.Helper()
	var tail []string
	for _, msg := range m.last().Messages {
		if msg.Role != "system" {
			tail = append(tail, msg.Role+": "+msg.text())
		}
	}
	got := strings.Join(tail, "\n")
	for _, w := range []string{"user: talk slowly", "assistant: Here is the first half of my answer", "[interrupted by the user]", "user: carry on"} {
		i := strings.Index(got, w)
		if i < 0 {
			t.Fatalf("the next request lacks %q:\n%s", w, got)
		}
		got = got[i+len(w):]
	}
}
