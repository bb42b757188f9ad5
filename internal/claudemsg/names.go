package claudemsg

import (
	"encoding/json"
	"maps"
)

// toolNames maps dsh tool names to Claude Code's. Claude Code users,
// their hooks, SDK callbacks and permission rules say "Bash" and "Read";
// whatever shows them a dsh call says it the same way.
var toolNames = map[string]string{
	"bash": "Bash", "bash_output": "BashOutput", "bash_kill": "KillShell",
	"read": "Read", "write": "Write", "edit": "Edit",
	"glob": "Glob", "grep": "Grep", "ls": "LS",
	"web_fetch": "WebFetch", "web_search": "WebSearch",
	"todo_write": "TodoWrite", "task": "Task", "subagent": "Task", "exit_plan_mode": "ExitPlanMode",
}

// dshNames is the reverse of toolNames ("Task" is dsh's task tool).
var dshNames = func() map[string]string {
	m := make(map[string]string, len(toolNames))
	for k, v := range toolNames {
		if k != "subagent" {
			m[v] = k
		}
	}
	return m
}()

// argRenames maps dsh argument names to Claude Code's, per dsh tool.
var argRenames = map[string]map[string]string{
	"bash":        {"timeoutMs": "timeout"},
	"bash_output": {"task_id": "bash_id"},
	"bash_kill":   {"task_id": "shell_id"},
	"subagent":    {"provider": "subagent_type"},
}

// ToolName is Claude Code's name for a dsh tool. MCP tools
// (mcp__server__tool) and tools Claude Code does not have keep their names.
func ToolName(name string) string {
	if n, ok := toolNames[name]; ok {
		return n
	}
	return name
}

// DshToolName is the dsh tool a Claude Code tool name stands for (the
// reverse of ToolName); unknown names are returned unchanged.
func DshToolName(name string) string {
	if n, ok := dshNames[name]; ok {
		return n
	}
	return name
}

// ToolInput converts a dsh tool's arguments to Claude Code's input object.
func ToolInput(tool string, args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage(`{}`)
	}
	return rename(args, argRenames[tool], false)
}

// FromToolInput converts a Claude Code input object (a hook's or an SDK
// callback's updatedInput) back to the dsh tool's argument names.
func FromToolInput(tool string, input json.RawMessage) json.RawMessage {
	return rename(input, argRenames[tool], true)
}

func rename(obj json.RawMessage, names map[string]string, reverse bool) json.RawMessage {
	if len(names) == 0 {
		return obj
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return obj
	}
	if reverse {
		inv := make(map[string]string, len(names))
		for k, v := range names {
			inv[v] = k
		}
		names = inv
	}
	out := maps.Clone(m)
	for k, v := range m {
		if nk, ok := names[k]; ok {
			delete(out, k)
			out[nk] = v
		}
	}
	b, _ := json.Marshal(out)
	return b
}
