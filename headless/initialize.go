package headless

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tools/task"
)

// hookEvents are the Claude Code hook events dsh fires (hooks.Bridge); an
// SDK callback registered for another event is reported, not kept.
var hookEvents = []string{"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "SessionStart",
	"SessionEnd", "Stop", "SubagentStart", "SubagentStop", "PreCompact", "Notification", "PermissionRequest"}

type initRequest struct {
	Hooks map[string][]struct {
		Matcher         string   `json:"matcher"`
		HookCallbackIDs []string `json:"hookCallbackIds"`
		Timeout         float64  `json:"timeout"`
		OnFailure       string   `json:"onFailure"`
	} `json:"hooks"`
	SDKMCPServers      []string                   `json:"sdkMcpServers"`
	JSONSchema         json.RawMessage            `json:"jsonSchema"`
	SystemPrompt       json.RawMessage            `json:"systemPrompt"`
	AppendSystemPrompt string                     `json:"appendSystemPrompt"`
	Agents             map[string]AgentDefinition `json:"agents"`
	MCPServers         map[string]json.RawMessage `json:"mcpServers"`
}

// AgentDefinition is a subagent defined inline, as Claude Code's --agents
// JSON and the SDK's agents option write it.
type AgentDefinition struct {
	Description     string   `json:"description"`
	Prompt          string   `json:"prompt"`
	Tools           []string `json:"tools,omitempty"`
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	Model           string   `json:"model,omitempty"`
}

// Definitions converts inline agents to dsh's subagent definitions. Claude
// Code's model aliases (sonnet, opus, haiku, inherit) that dsh cannot
// resolve leave the parent's model; resolve decides.
func Definitions(defs map[string]AgentDefinition, resolve func(string) (string, bool)) ([]subagent.Definition, []string) {
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []subagent.Definition
	var warnings []string
	for _, n := range names {
		d := defs[n]
		if strings.TrimSpace(d.Prompt) == "" {
			warnings = append(warnings, fmt.Sprintf("agent %q has no prompt; it was left out", n))
			continue
		}
		sd := subagent.Definition{Name: n, Description: d.Description, Prompt: d.Prompt, Tools: d.Tools, Path: "inline"}
		if len(d.DisallowedTools) > 0 {
			warnings = append(warnings, fmt.Sprintf("agent %q: disallowedTools is not supported for subagents; list the tools it may use in tools instead", n))
		}
		if m := strings.TrimSpace(d.Model); m != "" && m != "inherit" {
			if id, ok := resolve(m); ok {
				sd.Model = id
			} else {
				warnings = append(warnings, fmt.Sprintf("agent %q: model %q is not configured; it uses the main model", n, m))
			}
		}
		out = append(out, sd)
	}
	return out, warnings
}

// initialize applies the SDK's initialize request: its hook callbacks,
// agents, in-process MCP servers, system prompt and output schema.
func (c *control) initialize(ctx context.Context, raw json.RawMessage) (any, error) {
	r := c.r
	var req initRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("malformed initialize request: %v", err)
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields)
	for k := range fields {
		switch k {
		case "subtype", "hooks", "sdkMcpServers", "jsonSchema", "systemPrompt", "appendSystemPrompt", "agents",
			"sdkMcpServerConfigs", "sdkMcpServerManifests", "captureSdkMcpManifests", "title", "promptSuggestions",
			"agentProgressSummaries", "forwardSubagentText", "supportedDialogKinds", "perTaskStopAffordance":
		default:
			if v := strings.TrimSpace(string(fields[k])); v != "null" && v != "" {
				c.warn("init:"+k, "the SDK's initialize option %q is not supported; it has no effect", k)
			}
		}
	}
	hooksApplied := false
	for event, groups := range req.Hooks {
		if !slices.Contains(hookEvents, event) {
			c.warn("hook:"+event, "SDK hooks for %s are not supported by dsh; those callbacks will not run", event)
			continue
		}
		var gs []hooks.Group
		for _, g := range groups {
			grp := hooks.Group{Matcher: g.Matcher}
			for _, id := range g.HookCallbackIDs {
				grp.Hooks = append(grp.Hooks, hooks.Hook{Command: "sdk:" + id, Source: "sdk", Timeout: g.Timeout,
					BlockOnFailure: g.OnFailure == "block", Func: c.hookFunc(id)})
			}
			gs = append(gs, grp)
		}
		r.sdkHooks.add(event, gs...)
		hooksApplied = true
	}
	if len(req.Agents) > 0 {
		defs, warnings := Definitions(req.Agents, func(m string) (string, bool) {
			id, _, ok := r.a.Host.LLM.Resolve(m)
			return id, ok
		})
		for _, w := range warnings {
			c.warn("agent:"+w, "%s", w)
		}
		if err := r.addAgents(defs); err != nil {
			return nil, err
		}
	}
	if s := strings.TrimSpace(string(req.SystemPrompt)); s != "" && s != "null" {
		var text string
		var parts []string
		if json.Unmarshal(req.SystemPrompt, &text) != nil {
			_ = json.Unmarshal(req.SystemPrompt, &parts)
			text = strings.Join(parts, "\n\n")
		}
		r.mu.Lock()
		r.system.replace = &text
		r.mu.Unlock()
	}
	if req.AppendSystemPrompt != "" {
		r.mu.Lock()
		r.system.append = req.AppendSystemPrompt
		r.mu.Unlock()
	}
	if s := strings.TrimSpace(string(req.JSONSchema)); s != "" && s != "null" {
		sc, err := newSchemaCheck(req.JSONSchema, r.o.SchemaRetries)
		if err != nil {
			return nil, fmt.Errorf("jsonSchema: %v", err)
		}
		r.mu.Lock()
		r.schema = sc
		r.mu.Unlock()
	}
	if len(req.SDKMCPServers) > 0 {
		if r.a.MCP == nil {
			return nil, fmt.Errorf("MCP is disabled (enabledPlugins), so the SDK's MCP servers cannot be used")
		}
		var servers []mcp.ServerConfig
		for _, name := range req.SDKMCPServers {
			t := &sdkTransport{c: c, name: name}
			c.mu.Lock()
			c.sdkMCP[name] = t
			c.mu.Unlock()
			servers = append(servers, mcp.ServerConfig{Name: name, Type: mcp.TransportSDK, Custom: t, Source: "sdk"})
		}
		if err := r.a.MCP.AddSessionServers(ctx, r.a.Host.Scope, servers); err != nil {
			c.warn("sdkmcp", "some SDK MCP servers could not be added: %v", err)
		}
		for _, s := range r.a.MCP.Servers() {
			if slices.Contains(req.SDKMCPServers, s.Name) && s.Error != "" {
				c.warn("sdkmcp:"+s.Name, "SDK MCP server %q: %s", s.Name, s.Error)
			}
		}
	}
	resp := map[string]any{
		"commands":                  []map[string]string{{"name": "compact", "description": "Summarize the conversation so far to free context", "argumentHint": "[focus]"}},
		"agents":                    c.agentInfos(),
		"output_style":              "default",
		"available_output_styles":   []string{"default"},
		"models":                    c.models(),
		"account":                   map[string]any{},
		"hook_on_failure_supported": true,
		"claude_code_version":       r.o.Version,
	}
	if len(req.Hooks) > 0 {
		resp["hooks_applied"] = hooksApplied
	}
	if len(req.MCPServers) > 0 {
		c.warn("init:mcpServers", "MCP servers sent in initialize are not read; pass them with --mcp-config (the SDK's default)")
		resp["mcp_servers_applied"] = false
	}
	return resp, nil
}

// hookFunc is an SDK hook callback as an in-process hook.
func (c *control) hookFunc(id string) func(ctx context.Context, payload []byte) (json.RawMessage, error) {
	return func(ctx context.Context, payload []byte) (json.RawMessage, error) {
		var p struct {
			ToolUseID string `json:"tool_use_id"`
		}
		_ = json.Unmarshal(payload, &p)
		req := map[string]any{"subtype": "hook_callback", "callback_id": id, "input": json.RawMessage(payload)}
		if p.ToolUseID != "" {
			req["tool_use_id"] = p.ToolUseID
		}
		out, err := c.request(ctx, req)
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(string(out)); s == "" || s == "null" {
			return json.RawMessage(`{}`), nil
		}
		return out, nil
	}
}

func (c *control) agentInfos() []map[string]string {
	out := []map[string]string{}
	for _, d := range c.r.agentDefinitions() {
		m := map[string]string{"name": d.Name, "description": d.Description}
		if d.Model != "" {
			m["model"] = d.Model
		}
		out = append(out, m)
	}
	return out
}

func (c *control) models() []map[string]string {
	out := []map[string]string{}
	for _, m := range c.r.a.Host.LLM.Models() {
		out = append(out, map[string]string{"value": m.ID, "displayName": m.ID, "description": m.ID})
	}
	return out
}

func permissionMode(s string) permission.Mode { return permission.Mode(s) }

// addAgents makes inline subagent definitions available to the task tool.
func (r *run) addAgents(defs []subagent.Definition) error { return AddAgents(r.a, defs) }

// agentDefinitions lists the subagents the task tool offers.
func (r *run) agentDefinitions() []subagent.Definition {
	if cat, ok := core.Lookup[*task.Catalog](r.a.Host); ok {
		return cat.Definitions()
	}
	return nil
}

// AddAgents makes inline subagent definitions (--agents, the SDK's
// agents) available to the app's task tool.
func AddAgents(a *app.App, defs []subagent.Definition) error {
	cat, ok := core.Lookup[*task.Catalog](a.Host)
	if !ok {
		return fmt.Errorf("subagents are switched off (enabledPlugins), so agents cannot be defined")
	}
	return cat.Add(defs...)
}

// ParseAgents reads --agents: a JSON object of agent definitions by name,
// as Claude Code takes it.
func ParseAgents(a *app.App, raw string) ([]subagent.Definition, []string, error) {
	var defs map[string]AgentDefinition
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&defs); err != nil {
		return nil, nil, fmt.Errorf("--agents: want {\"name\": {\"description\": …, \"prompt\": …, \"tools\": […], \"model\": …}}: %v", err)
	}
	out, warnings := Definitions(defs, func(m string) (string, bool) {
		id, _, ok := a.Host.LLM.Resolve(m)
		return id, ok
	})
	return out, warnings, nil
}
