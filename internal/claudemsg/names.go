package claudemsg

import (
	"bytes"
	"encoding/json"
	"maps"
	"path/filepath"
)

// toolNames maps dsh tool names to Claude Code's. Claude Code users,
// their hooks, SDK callbacks and permission rules say "Bash" and "Read";
// whatever shows them a dsh call says it the same way. Both subagent tools
// (task, fork) are Claude Code's Agent tool, which its earlier versions
// called Task (see aliases).
var toolNames = map[string]string{
	"bash": "Bash", "bash_output": "BashOutput", "bash_kill": "KillShell",
	"read": "Read", "write": "Write", "edit": "Edit",
	"glob": "Glob", "grep": "Grep", "ls": "LS",
	"web_fetch": "WebFetch", "web_search": "WebSearch",
	"todo_write": "TodoWrite", "task": "Agent", "fork": "Agent", "exit_plan_mode": "ExitPlanMode", "skill": "Skill",
}

// aliases are the other names Claude Code accepts for one of its tools:
// hook matchers and permission rules written for other versions use them
// (Agent was Task; BashOutput and KillShell became TaskOutput and
// TaskStop).
var aliases = map[string][]string{
	"Agent":      {"Task"},
	"BashOutput": {"TaskOutput"},
	"KillShell":  {"TaskStop"},
}

// dshNames is the reverse of toolNames and of the aliases ("Agent" and
// "Task" are dsh's task tool; fork is reached by name only).
var dshNames = func() map[string]string {
	m := make(map[string]string, len(toolNames))
	for k, v := range toolNames {
		if k != "fork" {
			m[v] = k
		}
	}
	for name, as := range aliases {
		for _, a := range as {
			m[a] = m[name]
		}
	}
	return m
}()

// argRenames maps dsh argument names to Claude Code's, per dsh tool.
var argRenames = map[string]map[string]string{
	"bash":        {"timeoutMs": "timeout"},
	"bash_output": {"task_id": "bash_id"},
	"bash_kill":   {"task_id": "shell_id"},
}

// pathArgs are the arguments that name files, per dsh tool (see AbsInput).
var pathArgs = map[string][]string{
	"read": {"file_path"}, "write": {"file_path"}, "edit": {"file_path"},
	"glob": {"path"}, "grep": {"path"}, "ls": {"path"},
}

// Aliases returns the other names Claude Code accepts for one of its tool
// names (Task for Agent), or nil.
func Aliases(claudeName string) []string { return aliases[claudeName] }

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

// ToolInputAt is ToolInput with the file paths made absolute against cwd
// (see AbsInput): what Claude Code hands hooks, which see absolute paths
// for Read, Write and Edit whatever spelling the model used.
func ToolInputAt(tool string, args json.RawMessage, cwd string) json.RawMessage {
	return AbsInput(tool, ToolInput(tool, args), cwd)
}

// AbsInput makes the file-path arguments of a Claude Code input object
// (file_path of Read, Write and Edit; path of Glob, Grep and LS) absolute
// against cwd, resolved exactly as dsh's tools resolve them (see AbsPath),
// so a guard keyed on a path cannot be passed by a relative spelling.
func AbsInput(tool string, input json.RawMessage, cwd string) json.RawMessage {
	keys := pathArgs[tool]
	if len(keys) == 0 || cwd == "" {
		return input
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil || m == nil {
		return input
	}
	changed := false
	for _, k := range keys {
		var p string
		if raw, ok := m[k]; ok && json.Unmarshal(raw, &p) == nil && p != "" {
			if abs := AbsPath(cwd, p); abs != p {
				m[k], _ = json.Marshal(abs)
				changed = true
			}
		}
	}
	if !changed {
		return input
	}
	b, err := json.Marshal(m)
	if err != nil {
		return input
	}
	return b
}

// AbsPath resolves p against cwd the way dsh's file tools do: an absolute
// p is cleaned, a relative one joined to cwd. "~" is not expanded, because
// the tools do not expand it either: the path a hook sees is the file the
// tool touches.
func AbsPath(cwd, p string) string {
	if filepath.IsAbs(p) || cwd == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(cwd, p)
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
	// Without HTML escaping: the arguments are what a tool runs, and a
	// command's ">" must stay readable in the log.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
	return bytes.TrimRight(buf.Bytes(), "\n")
}
