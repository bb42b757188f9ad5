package bashtool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/tool"
)

var taskSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "task_id": {"type": "string", "description": "The background task's id, as returned by bash (e.g. \"bash-1\")."}
  },
  "required": ["task_id"]
}`)

type taskArgs struct {
	TaskID string `json:"task_id"`
}

// taskID reads and checks the task_id argument.
func taskID(name string, call tool.Call) (bash.TaskID, error) {
	a, err := tool.DecodeArgs[taskArgs](call)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(a.TaskID)
	if id == "" {
		return "", fmt.Errorf(`invalid task_id: expected a task id such as "bash-1", got %q`, a.TaskID)
	}
	return bash.TaskID(id), nil
}

// taskMeta is the presentation data recorded with bash_output and bash_kill
// results.
type taskMeta struct {
	TaskID      string `json:"taskId"`
	Status      string `json:"status"`
	ExitCode    *int   `json:"exitCode,omitempty"`
	Signal      string `json:"signal,omitempty"`
	Lossy       bool   `json:"lossy,omitempty"`
	StdoutSpill string `json:"stdoutSpill,omitempty"`
	StderrSpill string `json:"stderrSpill,omitempty"`
}

type outputTool struct{ s *state }

func (t *outputTool) Info() tool.Info {
	return tool.Info{
		Name:        NameOutput,
		Description: description(outputDescription),
		Parameters:  taskSchema,
		Kind:        tool.KindExecute,
		ReadOnly:    true,
	}
}

func (t *outputTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	id, err := taskID(NameOutput, call)
	if err != nil {
		return tool.Result{}, err
	}
	r, err := t.s.exec.Read(ctx, owner(call.Host), id)
	if err != nil {
		return tool.Result{}, taskError(id, err)
	}
	meta := taskMeta{
		TaskID:      string(id),
		Status:      string(r.Task.Status),
		ExitCode:    r.Task.ExitCode,
		Signal:      r.Task.Signal,
		Lossy:       r.Lossy,
		StdoutSpill: r.StdoutSpill,
		StderrSpill: r.StderrSpill,
	}
	return tool.Result{Content: textContent(renderRead(r)), Meta: mustJSON(meta)}, nil
}

func (t *outputTool) PresentCall(args json.RawMessage) *tool.View {
	return taskView("Read output from background task %s", args)
}

type killTool struct{ s *state }

func (t *killTool) Info() tool.Info {
	return tool.Info{
		Name:        NameKill,
		Description: description(killDescription),
		Parameters:  taskSchema,
		Kind:        tool.KindExecute,
	}
}

func (t *killTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	id, err := taskID(NameKill, call)
	if err != nil {
		return tool.Result{}, err
	}
	killed, err := t.s.exec.Kill(ctx, owner(call.Host), id)
	if err != nil {
		return tool.Result{}, taskError(id, err)
	}
	if !killed {
		return tool.TextResult(fmt.Sprintf("task %s had already finished", id)), nil
	}
	return tool.TextResult(fmt.Sprintf("killed background task %s", id)), nil
}

func (t *killTool) PresentCall(args json.RawMessage) *tool.View {
	return taskView("Kill background task %s", args)
}

// taskView is the generic card of bash_output and bash_kill calls.
func taskView(title string, args json.RawMessage) *tool.View {
	var a taskArgs
	if json.Unmarshal(args, &a) != nil || strings.TrimSpace(a.TaskID) == "" {
		return nil
	}
	return &tool.View{Title: fmt.Sprintf(title, a.TaskID), Kind: tool.KindExecute}
}
