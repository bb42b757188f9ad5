package hooks

import (
	"encoding/json"
	"strings"

	"github.com/dshq/dsh/internal/claudemsg"
)

// ToolName is the dialect's name for a dsh tool. MCP tools
// (mcp__server__tool) and unknown tools keep their names.
func ToolName(dialect, name string) string {
	if dialect == Codex {
		switch name {
		case "bash":
			return "Bash"
		case "edit", "write":
			return "apply_patch"
		}
		return name
	}
	return claudemsg.ToolName(name)
}

// ToolInput converts dsh arguments to the dialect's input object.
func ToolInput(dialect, tool string, args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage(`{}`)
	}
	if dialect == Codex {
		if strings.HasPrefix(tool, "mcp__") {
			return args // Codex hands MCP tools' arguments over as they are
		}
		var a struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(args, &a)
		if tool == "edit" || tool == "write" {
			a.Command = patchText(tool, args)
		}
		b, _ := json.Marshal(map[string]string{"command": a.Command})
		return b
	}
	return claudemsg.ToolInput(tool, args)
}

// ToolInputAt is ToolInput with file paths absolute against cwd, as hooks
// see them (Claude Code resolves Read, Write and Edit paths before hooks
// run).
func ToolInputAt(dialect, tool string, args json.RawMessage, cwd string) json.RawMessage {
	if dialect == Codex {
		if tool == "write" || tool == "edit" {
			args = claudemsg.AbsInput(tool, args, cwd)
		}
		return ToolInput(dialect, tool, args)
	}
	if len(args) == 0 {
		return json.RawMessage(`{}`)
	}
	return claudemsg.ToolInputAt(tool, args, cwd)
}

// FromToolInput converts a dialect input object (an updatedInput) back to
// dsh's argument names.
func FromToolInput(dialect, tool string, input json.RawMessage) json.RawMessage {
	if dialect == Codex {
		return input
	}
	return claudemsg.FromToolInput(tool, input)
}

// patchText renders an edit or write as Codex's apply_patch envelope so a
// Codex hook inspecting tool_input.command sees the file and the change.
func patchText(tool string, args json.RawMessage) string {
	var a struct {
		FilePath  string `json:"file_path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	}
	_ = json.Unmarshal(args, &a)
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	if tool == "write" {
		b.WriteString("*** Add File: " + a.FilePath + "\n")
		for _, l := range strings.Split(strings.TrimSuffix(a.Content, "\n"), "\n") {
			b.WriteString("+" + l + "\n")
		}
	} else {
		b.WriteString("*** Update File: " + a.FilePath + "\n@@\n")
		for _, l := range strings.Split(a.OldString, "\n") {
			b.WriteString("-" + l + "\n")
		}
		for _, l := range strings.Split(a.NewString, "\n") {
			b.WriteString("+" + l + "\n")
		}
	}
	b.WriteString("*** End Patch")
	return b.String()
}
