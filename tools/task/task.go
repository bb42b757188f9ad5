// Package task is the model-facing delegation tool: a task description and
// a self-contained prompt go to a child agent; its final answer comes back.
// Several calls in one step run concurrently (up to the service's breadth
// cap). One tool is exposed per provider: "task" for spawn, "fork" for
// fork.
package task

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tool"
)

//go:embed task.md
var taskDescription string

//go:embed fork.md
var forkDescription string

type args struct {
	Description  string `json:"description" jsonschema:"a 3-5 word label for the task"`
	Prompt       string `json:"prompt" jsonschema:"the complete, self-contained task for the child agent"`
	SubagentType string `json:"subagent_type,omitempty" jsonschema:"name of a custom agent to use (optional)"`
}

// argsSchema is args' JSON Schema, written out rather than inferred:
// inferring and marshalling it by reflection at every start was 180 KB of
// the start's allocations, enough to push a start past the runtime's first
// heap goal and into a collection before the prompt (docs/benchmarks.md,
// start-up). TestSchemaMatchesTheArgumentType fails when the two part.
const argsSchema = `{"type":"object","properties":{"description":{"type":"string","description":"a 3-5 word label for the task"},"prompt":{"type":"string","description":"the complete, self-contained task for the child agent"},"subagent_type":{"type":"string","description":"name of a custom agent to use (optional)"}},"required":["description","prompt"],"additionalProperties":false}`

// Tool returns the delegation tool for provider, named name.
func Tool(name, provider string, svc *subagent.Service, agents *agent.Registry, defs []subagent.Definition) tool.Tool {
	desc := taskDescription
	if provider == "fork" {
		desc = forkDescription
	}
	if len(defs) > 0 {
		var b strings.Builder
		b.WriteString(desc)
		b.WriteString("\n\nCustom agents you can choose with subagent_type:\n")
		for _, d := range defs {
			fmt.Fprintf(&b, "- %s: %s\n", d.Name, d.Description)
		}
		desc = b.String()
	}
	return presented{tool.Func(tool.Info{Name: name, Description: desc, Parameters: json.RawMessage(argsSchema), Kind: tool.KindOther, Concurrent: true},
		func(ctx context.Context, call tool.Call, a args) (tool.Result, error) {
			parent := subagent.Host(agents, call.Host)
			if parent == nil {
				return tool.Result{}, errors.New(name + " requires a calling agent")
			}
			if strings.TrimSpace(a.Prompt) == "" {
				return tool.Result{}, tool.ArgsError(name, "prompt must not be empty")
			}
			req := subagent.Request{Parent: parent, CallID: call.ID, Description: a.Description, Prompt: []llm.Block{llm.Text(a.Prompt)}}
			if a.SubagentType != "" {
				var def *subagent.Definition
				for i := range defs {
					if defs[i].Name == a.SubagentType {
						def = &defs[i]
					}
				}
				if def == nil {
					var names []string
					for _, d := range defs {
						names = append(names, d.Name)
					}
					return tool.Result{}, fmt.Errorf("unknown subagent_type %q (available: %s)", a.SubagentType, strings.Join(names, ", "))
				}
				req.AgentName = def.Name
				req.Options.Model = def.Model
				req.Options.SystemPrompt = def.Prompt
				// nil means unrestricted; an empty list (which LoadDefinitions
				// refuses) must not widen to every tool.
				if def.Tools != nil || def.DisallowedTools != nil {
					var allowed map[string]bool
					if def.Tools != nil {
						allowed = map[string]bool{}
						for _, t := range def.Tools {
							allowed[canonical(t)] = true
						}
					}
					denied := map[string]bool{}
					for _, t := range def.DisallowedTools {
						denied[canonical(t)] = true
					}
					req.Options.Tools = func(i tool.Info) bool {
						return (allowed == nil || allowed[i.Name]) && !denied[i.Name]
					}
				}
			}
			res, err := svc.Delegate(ctx, provider, req)
			if err != nil {
				return tool.Result{}, err
			}
			meta, _ := json.Marshal(map[string]any{"childSession": res.ChildSession, "stopReason": res.StopReason, "provider": provider})
			switch res.StopReason {
			case subagent.Completed:
				text := llm.TextOf(res.Output)
				if text == "" {
					text = "(the subagent finished without a written answer)"
				}
				return tool.Result{Content: []llm.Block{llm.Text(text)}, Meta: meta}, nil
			case subagent.Aborted:
				return tool.Result{}, errors.New("subagent run was cancelled")
			case subagent.MaxTokens:
				return tool.Result{}, errors.New("subagent run hit its token limit before finishing")
			case subagent.Refusal:
				return tool.Result{}, errors.New("subagent declined the task")
			}
			return tool.Result{}, errors.New("subagent run failed")
		})}
}

// presented gives the delegation tool its card title: "Task <description>"
// (with the custom agent's name), not the raw arguments with the whole
// prompt in them.
type presented struct{ tool.Tool }

// PresentCall implements [tool.CallPresenter].
func (p presented) PresentCall(raw json.RawMessage) *tool.View {
	var a args
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	title := strings.TrimSpace(a.Description)
	if title == "" {
		title = strings.TrimSpace(a.Prompt)
	}
	if title == "" {
		return nil
	}
	head := "Task"
	if p.Info().Name == "fork" {
		head = "Fork"
	}
	if a.SubagentType != "" {
		title += " (" + a.SubagentType + ")"
	}
	return &tool.View{Title: head + " " + title, Kind: tool.KindOther}
}

var _ tool.CallPresenter = presented{}

var claudeNames = map[string]string{"Bash": "bash", "Read": "read", "Write": "write", "Edit": "edit", "Glob": "glob",
	"Grep": "grep", "LS": "ls", "WebFetch": "web_fetch", "WebSearch": "web_search", "TodoWrite": "todo_write"}

func canonical(n string) string {
	if c, ok := claudeNames[n]; ok {
		return c
	}
	return n
}
