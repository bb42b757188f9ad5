package todo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// event is one Append call.
type event struct {
	typ  string
	data any
}

// fakeHost records the events a tool appends.
type fakeHost struct {
	events []event
	err    error // returned by Append
	scope  *kernel.Scope
}

func (h *fakeHost) AgentID() string   { return "agent-1" }
func (h *fakeHost) SessionID() string { return "session-1" }
func (h *fakeHost) Cwd() string       { return "/work" }
func (h *fakeHost) Append(_ context.Context, typ string, data any) error {
	if h.err != nil {
		return h.err
	}
	h.events = append(h.events, event{typ, data})
	return nil
}
func (h *fakeHost) Inject(context.Context, []llm.Block, llm.Source) error { return nil }
func (h *fakeHost) Scope() *kernel.Scope                                  { return h.scope }

func newHost(t *testing.T) *fakeHost {
	s := kernel.NewScope("agent")
	t.Cleanup(func() { _ = s.Close() })
	return &fakeHost{scope: s}
}

func call(t *testing.T, h tool.Host, args string) (string, error) {
	t.Helper()
	c := tool.Call{ID: "c1", Name: Name, Args: json.RawMessage(args), Raw: args}
	if h != nil {
		c.Host = h
	}
	res, err := New().Run(context.Background(), c)
	if err != nil {
		return "", err
	}
	return llm.TextOf(res.Content), nil
}

func TestWriteAppendsEvent(t *testing.T) {
	h := newHost(t)
	out, err := call(t, h, `{"todos":[
		{"content":"  plan the work  ","status":"in_progress","activeForm":" Planning the work "},
		{"content":"build","status":"pending"},
		{"content":"ship","status":"completed"},
		{"content":"test","status":"pending"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Updated todo list: 2 pending, 1 in progress, 1 completed."; out != want {
		t.Errorf("text = %q, want %q", out, want)
	}
	want := []event{{EventTodoWrite, Write{Todos: []Item{
		{Content: "plan the work", Status: InProgress, ActiveForm: "Planning the work"},
		{Content: "build", Status: Pending},
		{Content: "ship", Status: Completed},
		{Content: "test", Status: Pending},
	}}}}
	if diff := cmp.Diff(want, h.events, cmp.AllowUnexported(event{})); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// The next call replaces the list; an empty list clears it and is
	// recorded as [] (not null).
	if out, err := call(t, h, `{"todos":[]}`); err != nil || out != "Updated todo list: 0 pending, 0 in progress, 0 completed." {
		t.Fatalf("empty list: %q, %v", out, err)
	}
	b, _ := json.Marshal(h.events[1].data)
	if string(b) != `{"todos":[]}` {
		t.Errorf("empty list payload = %s", b)
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		args, want string
	}{
		{`{"todos":[{"content":"   ","status":"pending"}]}`, "invalid todo: `content` must be a non-empty string"},
		{`{"todos":[{"content":"a <b>","status":"pending"},{"content":" a <b> ","status":"completed"}]}`, `invalid todos: duplicate content "a <b>"`},
		{`{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`, "invalid todos: at most one task may be in_progress, got 2"},
		{`{"todos":[{"content":"","status":"doing"}]}`, `"todos[0].status" must be one of ["pending","in_progress","completed"]`},
		{`{"todos":"nope"}`, "invalid arguments for todo_write"},
	}
	for _, tt := range tests {
		h := newHost(t)
		_, err := call(t, h, tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.args, err, tt.want)
		}
		if len(h.events) != 0 {
			t.Errorf("%s: an invalid list was recorded", tt.args)
		}
	}
}

func TestHostErrors(t *testing.T) {
	// No agent: an error, but only after the list itself checks out.
	if _, err := call(t, nil, `{"todos":[{"content":"a","status":"pending"}]}`); !errors.Is(err, ErrNoSession) {
		t.Errorf("no host: err = %v", err)
	}
	if _, err := call(t, nil, `{"todos":[{"content":"","status":"pending"}]}`); err == nil || !strings.Contains(err.Error(), "non-empty") {
		t.Errorf("no host, bad list: err = %v, want the list error", err)
	}
	boom := errors.New("log closed")
	h := newHost(t)
	h.err = boom
	if _, err := call(t, h, `{"todos":[]}`); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "todo_write: ") {
		t.Errorf("append failure: err = %v", err)
	}
}

func TestSchema(t *testing.T) {
	info := New().Info()
	if info.Name != "todo_write" || info.Kind != tool.KindOther || !info.ReadOnly || info.Concurrent {
		t.Errorf("info = %+v", info)
	}
	if !strings.Contains(info.Description, "ENTIRE list") {
		t.Errorf("description not embedded: %q", info.Description)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(info.Parameters, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	valid := func(args string) bool {
		var v any
		if err := json.Unmarshal([]byte(args), &v); err != nil {
			t.Fatal(err)
		}
		return r.Validate(v) == nil
	}
	for args, want := range map[string]bool{
		`{"todos":[]}`: true,
		`{"todos":[{"content":"a","status":"pending","activeForm":"A-ing"}]}`: true,
		`{"todos":[{"content":"a","status":"pending","id":"1"}]}`:             true, // extra keys are ignored
		`{}`:               false,
		`{"todos":"nope"}`: false,
		`{"todos":[{"content":"a","status":"doing"}]}`: false,
		`{"todos":[{"content":"a"}]}`:                  false,
		`{"todos":[{"status":"pending"}]}`:             false,
		`{"todos":[{"content":1,"status":"pending"}]}`: false,
	} {
		if got := valid(args); got != want {
			t.Errorf("schema accepts %s = %v, want %v", args, got, want)
		}
	}
}

func TestPresentCall(t *testing.T) {
	p, ok := New().(tool.CallPresenter)
	if !ok {
		t.Fatal("no call presenter")
	}
	got := p.PresentCall(json.RawMessage(`{"todos":[{"content":"plan","status":"completed"},{"content":"build","status":"in_progress"},{"content":"ship","status":"pending"}]}`))
	want := &tool.View{Title: "Update todo list", Kind: tool.KindOther, Text: "[x] plan\n[~] build\n[ ] ship"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := p.PresentCall(json.RawMessage(`{"todos":[]}`)); got == nil || got.Text != "(empty list)" {
		t.Errorf("empty list view = %+v", got)
	}
	for _, bad := range []string{`nope`, `{}`, `{"todos":"x"}`, `{"todos":[{"content":"a","status":"doing"}]}`, `{"todos":[{"status":"pending"}]}`} {
		if v := p.PresentCall(json.RawMessage(bad)); v != nil {
			t.Errorf("PresentCall(%s) = %+v, want nil", bad, v)
		}
	}
}

// Through the registry, schema violations are caught before the tool runs,
// and the summary reaches the model as the result.
func TestThroughRegistry(t *testing.T) {
	r := tool.NewRegistry()
	if _, err := r.Register(New()); err != nil {
		t.Fatal(err)
	}
	h := newHost(t)
	exec := func(args string) tool.Outcome {
		return r.Execute(context.Background(), tool.NewCall("c1", Name, args, h), tool.ExecOptions{})
	}
	out := exec(`{"todos":[{"content":"plan","status":"in_progress"},{"content":"build","status":"pending"}]}`)
	if out.Result.IsError || !strings.Contains(llm.TextOf(out.Result.Content), "1 pending, 1 in progress, 0 completed") {
		t.Errorf("result = %+v", out.Result)
	}
	for _, args := range []string{`{"todos":[{"content":"a","status":"doing"}]}`, `{"todos":"nope"}`, `{}`} {
		out := exec(args)
		if !out.Result.IsError || out.Error == nil || out.Error.Code != "INVALID_ARGS" {
			t.Errorf("%s: outcome = %+v", args, out)
		}
	}
	out = exec(`{"todos":[{"content":"a","status":"pending"},{"content":"a","status":"pending"}]}`)
	if !out.Result.IsError || !strings.Contains(llm.TextOf(out.Result.Content), "Error: invalid todos: duplicate content") {
		t.Errorf("duplicate: %+v", out.Result)
	}
	if len(h.events) != 1 {
		t.Errorf("%d events recorded, want 1 (only the valid call)", len(h.events))
	}
}

func TestRestateAfterCompaction(t *testing.T) {
	ev := func(seq int64, typ, data string) session.Event {
		return session.Event{Type: typ, Seq: seq, Data: json.RawMessage(data)}
	}
	list := `{"todos":[{"content":"Write the parser","status":"completed"},{"content":"Test the parser","status":"in_progress"}]}`
	done := `{"todos":[{"content":"Write the parser","status":"completed"}]}`
	events := []session.Event{
		ev(0, session.TypeTurnStart, `{"turn":1}`),
		ev(5, EventTodoWrite, `{"todos":[{"content":"old","status":"pending"}]}`),
		ev(9, EventTodoWrite, list),
		ev(12, "plugin/other", `{}`),
	}
	got := Restate(events, 10)
	if !strings.Contains(got, "- [in_progress] Test the parser") || !strings.Contains(got, "- [completed] Write the parser") || strings.Contains(got, "old") {
		t.Fatalf("restated %q", got)
	}
	if got := Restate(events, 8); got != "" {
		t.Fatalf("the last update is still visible after the summary, yet restated: %q", got)
	}
	if got := Restate(append(events, ev(13, EventTodoWrite, done)), 20); got != "" {
		t.Fatalf("a finished list restated: %q", got)
	}
	if got := Restate(append(events, ev(13, EventTodoWrite, `{"todos":`)), 20); !strings.Contains(got, "Test the parser") {
		t.Fatalf("a damaged last entry must fall back to the one before: %q", got)
	}
	if got := Restate(events[:1], 20); got != "" {
		t.Fatalf("no list, yet %q", got)
	}
}
