package todo

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Name is the tool's name.
const Name = "todo_write"

// EventTodoWrite is the session event type that records a list. Its data
// is a [Write].
const EventTodoWrite = "todo/write"

// Status is where a todo stands.
type Status string

// Statuses.
const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
)

// Item is one todo.
type Item struct {
	Content string `json:"content"`
	Status  Status `json:"status"`
	// ActiveForm is the task as an ongoing action ("Running the tests"),
	// for front-ends to show while it is in progress.
	ActiveForm string `json:"activeForm,omitempty"`
}

// Write is both the tool's arguments and the payload of the EventTodoWrite
// event: the complete list, replacing any earlier one.
type Write struct {
	Todos []Item `json:"todos"`
}

//go:embed todo_write.md
var description string

// parameters is written out rather than inferred so that the enum, the
// required keys and the descriptions are exactly what the model sees.
const parameters = `{
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The complete updated list; it replaces the previous one.",
      "items": {
        "type": "object",
        "properties": {
          "content": {"type": "string", "description": "The task, as an action: \"Add a cache to the resolver\""},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
          "activeForm": {"type": "string", "description": "The task as an ongoing action, shown while in progress: \"Adding a cache to the resolver\""}
        },
        "required": ["content", "status"]
      }
    }
  },
  "required": ["todos"]
}`

// New returns the todo_write tool.
func New() tool.Tool {
	info := tool.Info{
		Name:        Name,
		Description: description,
		Parameters:  json.RawMessage(parameters),
		Kind:        tool.KindOther,
		// It changes nothing outside the session, so it needs no approval;
		// but two calls in one step must append in call order (the last
		// list wins), so it does not run concurrently.
		ReadOnly: true,
	}
	return presented{tool.Func(info, run)}
}

// ErrNoSession is returned when the call has no agent whose session could
// hold the list.
var ErrNoSession = errors.New("todo_write requires an owning agent session")

func run(ctx context.Context, call tool.Call, w Write) (tool.Result, error) {
	todos, err := validate(w.Todos)
	if err != nil {
		return tool.Result{}, err
	}
	// Checked after the values, so a model calling outside a session
	// still learns what was wrong with its list.
	if call.Host == nil {
		return tool.Result{}, ErrNoSession
	}
	if err := call.Host.Append(ctx, EventTodoWrite, Write{Todos: todos}); err != nil {
		return tool.Result{}, fmt.Errorf("todo_write: recording the list: %w", err)
	}
	var n [3]int
	for _, t := range todos {
		switch t.Status {
		case Pending:
			n[0]++
		case InProgress:
			n[1]++
		case Completed:
			n[2]++
		}
	}
	return tool.TextResult(fmt.Sprintf("Updated todo list: %d pending, %d in progress, %d completed.", n[0], n[1], n[2])), nil
}

// validate checks a list and returns it normalized (content and activeForm
// trimmed; never nil, so the event records [] rather than null). Statuses
// are checked first, as the schema would have been; then each content must
// be non-empty and unique after trimming, and at most one todo may be in
// progress.
func validate(items []Item) ([]Item, error) {
	for i, it := range items {
		switch it.Status {
		case Pending, InProgress, Completed:
		default:
			return nil, tool.ArgsError(Name, fmt.Sprintf(`"todos[%d].status" must be one of ["pending","in_progress","completed"]`, i))
		}
	}
	out := make([]Item, 0, len(items))
	seen := make(map[string]bool, len(items))
	inProgress := 0
	for _, it := range items {
		content := strings.TrimSpace(it.Content)
		if content == "" {
			return nil, errors.New("invalid todo: `content` must be a non-empty string")
		}
		if seen[content] {
			return nil, fmt.Errorf("invalid todos: duplicate content %s", jsonString(content))
		}
		seen[content] = true
		if it.Status == InProgress {
			inProgress++
		}
		out = append(out, Item{Content: content, Status: it.Status, ActiveForm: strings.TrimSpace(it.ActiveForm)})
	}
	if inProgress > 1 {
		return nil, fmt.Errorf("invalid todos: at most one task may be in_progress, got %d", inProgress)
	}
	return out, nil
}

// jsonString quotes s as JSON without escaping <, > and &.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// presented gives the tool its call presenter.
type presented struct{ tool.Tool }

// PresentCall shows the list being written as a checklist: "[x]" done,
// "[~]" in progress, "[ ]" pending. It is pure and returns nil for
// arguments that are not a well-formed list, so replays of odd logs fall
// back to the generic card.
func (presented) PresentCall(args json.RawMessage) *tool.View {
	var w struct {
		Todos *[]struct {
			Content *string `json:"content"`
			Status  Status  `json:"status"`
		} `json:"todos"`
	}
	if json.Unmarshal(args, &w) != nil || w.Todos == nil {
		return nil
	}
	var b strings.Builder
	for _, t := range *w.Todos {
		var mark string
		switch t.Status {
		case Completed:
			mark = "[x] "
		case InProgress:
			mark = "[~] "
		case Pending:
			mark = "[ ] "
		default:
			return nil
		}
		if t.Content == nil {
			return nil
		}
		b.WriteString(mark)
		b.WriteString(*t.Content)
		b.WriteByte('\n')
	}
	text := strings.TrimSuffix(b.String(), "\n")
	if text == "" {
		text = "(empty list)"
	}
	return &tool.View{Title: "Update todo list", Kind: tool.KindOther, Text: text}
}

// Restate returns context restating a session's latest todo list for a
// model that can no longer see it, because a compaction summary replaced
// the history up to seq upto, which included the list's last update. It is
// empty when there is no list, the list has nothing left to do, or the last
// update is still visible (after upto).
func Restate(events []session.Event, upto int64) string {
	var (
		last  Write
		at    int64 = -1
		found bool
	)
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != EventTodoWrite {
			continue
		}
		w, err := session.Decode[Write](events[i])
		if err != nil {
			continue // a damaged entry: look further back
		}
		last, at, found = w, events[i].Seq, true
		break
	}
	if !found || at > upto {
		return ""
	}
	open := slices.ContainsFunc(last.Todos, func(t Item) bool { return t.Status != Completed })
	if !open {
		return ""
	}
	var b strings.Builder
	b.WriteString("The conversation was summarized; your todo list, as you last wrote it with " + Name + ":\n")
	for _, t := range last.Todos {
		fmt.Fprintf(&b, "- [%s] %s\n", t.Status, t.Content)
	}
	b.WriteString("Keep it current with " + Name + " as you work.")
	return b.String()
}
