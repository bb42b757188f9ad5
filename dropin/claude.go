// Package dropin reads the configuration files of Claude Code and Codex
// that mean something to dsh, so their users can switch keeping them:
// Claude Code's settings files (permissions, env, its plugin switches) as
// layers of dsh's settings pipeline, and Codex's config.toml (MCP servers
// and hooks) for the capabilities that run them.
//
// These files are not dsh's: dsh reads what it uses and names the rest in
// a note (the log, dsh doctor) instead of refusing to start over a key it
// does not know.
package dropin

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/settings"
)

// ClaudeCode names Claude Code as a settings file's tool.
const ClaudeCode = "Claude Code"

// ClaudeSettings are Claude Code's settings files as layers of dsh's
// pipeline: ~/.claude/settings.json below $DSH_HOME/settings.json,
// .claude/settings.json below .dsh/settings.json, and
// .claude/settings.local.json below .dsh/settings.local.json — Claude
// Code's own precedence (user < project < local), each just under dsh's
// file of the same standing. userHome expands ~ in rules; project is the
// working directory ("" for the user's file only).
func ClaudeSettings(userHome, project string) []settings.Foreign {
	var out []settings.Foreign
	add := func(layer settings.Layer, path, root string) {
		out = append(out, settings.Foreign{Layer: layer, Path: path, From: ClaudeCode, Convert: func(b []byte) (settings.Converted, error) {
			return ConvertClaude(b, userHome, root)
		}})
	}
	if userHome != "" {
		add(settings.LayerUser, filepath.Join(userHome, ".claude", "settings.json"), "")
	}
	if project != "" {
		add(settings.LayerProject, filepath.Join(project, ".claude", "settings.json"), project)
		add(settings.LayerLocal, filepath.Join(project, ".claude", "settings.local.json"), project)
	}
	return out
}

// Keys of a Claude Code settings file that other dsh capabilities read
// from the file themselves (the hooks plugin), so they are not noted as
// unused.
var readElsewhere = map[string]string{
	"hooks":           "hooks",
	"disableAllHooks": "hooks",
	"$schema":         "",
}

// Claude Code settings keys dsh knows and does not use, with what to do
// instead; any other key gets a generic note.
var unusedHints = map[string]string{
	"model":                      `dsh names models provider/model; set "model" in ~/.dsh/settings.json or pass --model`,
	"apiKeyHelper":               "dsh reads API keys from the environment (ANTHROPIC_API_KEY, …) or providers in its settings",
	"enableAllProjectMcpServers": "dsh starts a project's .mcp.json servers once you trust the project",
	"enabledMcpjsonServers":      "dsh starts a project's .mcp.json servers once you trust the project",
	"disabledMcpjsonServers":     `switch a server off with "disabled": true in its mcpServers entry`,
	"statusLine":                 "dsh's status line is built in",
	"outputStyle":                "",
	"cleanupPeriodDays":          "",
	"includeCoAuthoredBy":        "",
}

// ConvertClaude maps a Claude Code settings file onto dsh's keys:
// "permissions" (allow, ask, deny, additionalDirectories, defaultMode,
// disableBypassPermissionsMode) and "env". Rules keep Claude Code's
// meaning: a path rule's leading single "/" is relative to the project
// root, as Claude Code reads it (dsh's own files read it as absolute).
// A rule dsh cannot read exactly is never silently weakened: an allow rule
// is left out, and an ask or deny rule is widened to its whole tool, each
// with a warning. root is the project directory ("" for the user's file).
func ConvertClaude(b []byte, userHome, root string) (settings.Converted, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return settings.Converted{}, fmt.Errorf("not valid JSON: %v", err)
	}
	if doc == nil {
		return settings.Converted{}, fmt.Errorf("not a JSON object")
	}
	out := settings.Converted{Keys: map[string]json.RawMessage{}}
	names := make([]string, 0, len(doc))
	for k := range doc {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		raw := doc[k]
		switch k {
		case "permissions":
			p, err := convertPermissions(raw, userHome, &out)
			if err != nil {
				out.Warnings = append(out.Warnings, "permissions: "+err.Error()+"; ignored")
				continue
			}
			if b, err := json.Marshal(p); err == nil {
				out.Keys["permissions"] = b
			}
		case "env":
			env, err := convertEnv(raw, &out)
			if err != nil {
				out.Warnings = append(out.Warnings, "env: "+err.Error()+"; ignored")
				continue
			}
			if len(env) > 0 {
				b, _ := json.Marshal(env)
				out.Keys["env"] = b
			}
		case "enabledPlugins", "extraKnownMarketplaces":
			// Read by the plugins capability (ClaudePlugins).
		default:
			if _, ok := readElsewhere[k]; ok {
				continue
			}
			note := k + ": not used by dsh"
			if h := unusedHints[k]; h != "" {
				note += " (" + h + ")"
			}
			out.Notes = append(out.Notes, note)
		}
	}
	return out, nil
}

func convertPermissions(raw json.RawMessage, userHome string, out *settings.Converted) (permission.Settings, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return permission.Settings{}, fmt.Errorf("not an object")
	}
	var p permission.Settings
	names := make([]string, 0, len(doc))
	for k := range doc {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := doc[k]
		switch k {
		case "allow", "ask", "deny":
			var rules []string
			if err := json.Unmarshal(v, &rules); err != nil {
				// A deny list that cannot be read must not vanish quietly.
				out.Warnings = append(out.Warnings, fmt.Sprintf("permissions.%s is not a list of strings; ignored", k))
				continue
			}
			for _, r := range rules {
				text, keep, warn := claudeRule(r, k, userHome)
				if warn != "" {
					out.Warnings = append(out.Warnings, warn)
				}
				if !keep {
					continue
				}
				switch k {
				case "allow":
					p.Allow = append(p.Allow, text)
				case "ask":
					p.Ask = append(p.Ask, text)
				case "deny":
					p.Deny = append(p.Deny, text)
				}
			}
		case "additionalDirectories":
			var dirs []string
			if err := json.Unmarshal(v, &dirs); err != nil {
				out.Warnings = append(out.Warnings, "permissions.additionalDirectories is not a list of strings; ignored")
				continue
			}
			p.AdditionalDirectories = dirs
		case "defaultMode":
			var m string
			_ = json.Unmarshal(v, &m)
			if _, err := permission.ParseMode(m); err != nil || m == "" {
				out.Notes = append(out.Notes, fmt.Sprintf("permissions.defaultMode %q: not a mode dsh has (%s); ignored", m, permission.ModeNames()))
				continue
			}
			p.DefaultMode = m
		case "disableBypassPermissionsMode":
			var d string
			_ = json.Unmarshal(v, &d)
			if d == "disable" {
				p.DisableBypassPermissionsMode = d
			} else {
				out.Notes = append(out.Notes, fmt.Sprintf("permissions.disableBypassPermissionsMode %q: only \"disable\" means something; ignored", d))
			}
		default:
			out.Notes = append(out.Notes, "permissions."+k+": not used by dsh")
		}
	}
	return p, nil
}

// pathTools take a path argument in Claude Code's rules.
var pathTools = []string{"Read", "Edit", "Write", "MultiEdit", "Glob", "Grep", "LS", "NotebookEdit", "NotebookRead"}

// claudeRule rewrites one Claude Code rule for dsh's parser. keep is false
// for a rule left out; warn says what was changed.
func claudeRule(r, behavior, userHome string) (text string, keep bool, warn string) {
	text = strings.TrimSpace(r)
	tool := permission.RuleTool(text)
	if i := strings.IndexByte(text, '('); i >= 0 && strings.HasSuffix(text, ")") && slices.Contains(pathTools, tool) {
		spec := text[i+1 : len(text)-1]
		if strings.HasPrefix(spec, "/") && !strings.HasPrefix(spec, "//") {
			// Claude Code: "/path" is relative to the project root.
			text = text[:i+1] + "." + spec + ")"
		}
	}
	err := permission.CheckRule(text, userHome)
	if err == nil {
		return text, true, ""
	}
	why := strings.TrimPrefix(err.Error(), "permission: ")
	if behavior == "allow" {
		return "", false, fmt.Sprintf("allow rule %q is not one dsh can read (%s); left out, so those calls ask", r, why)
	}
	if tool == "" || permission.CheckRule(tool, userHome) != nil {
		return "", false, fmt.Sprintf("%s rule %q is not one dsh can read (%s); left out", behavior, r, why)
	}
	return tool, true, fmt.Sprintf("%s rule %q is not one dsh can read exactly (%s); it is applied to every %s call instead", behavior, r, why, tool)
}

func convertEnv(raw json.RawMessage, out *settings.Converted) (map[string]string, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("not an object")
	}
	env := map[string]string{}
	for k, v := range doc {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			// Claude Code takes numbers and booleans as their text.
			var x any
			if json.Unmarshal(v, &x) != nil {
				continue
			}
			switch x.(type) {
			case float64, bool:
				s = strings.TrimSpace(string(v))
			default:
				out.Notes = append(out.Notes, "env."+k+": not a string; ignored")
				continue
			}
		}
		env[k] = s
	}
	return env, nil
}
