package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/tool"
)

// Names of the tool-search tools.
const (
	SearchToolName = "mcp_tool_search"
	CallToolName   = "mcp_call"
)

const (
	defaultSearchLimit = 5
	maxSearchLimit     = 20
)

// searchTool finds deferred MCP tools by keyword and returns their schemas.
type searchTool struct{ m *Manager }

var searchSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"Keywords matched against tool names, servers and descriptions (e.g. \"github issue create\"), or an exact tool name"},` +
	`"limit":{"type":"integer","minimum":1,"maximum":20,"description":"Most tools to return (default 5)"}},` +
	`"required":["query"],"additionalProperties":false}`)

// Info names only the servers every caller sees (those not added for one
// session): the description is the same for every session.
func (t *searchTool) Info() tool.Info {
	servers := ""
	if p := t.m.summary.Load(); p != nil && *p != "" {
		servers = " Servers (tools): " + *p + "."
	}
	return tool.Info{
		Name: SearchToolName,
		Description: "Search the tools of connected MCP servers that are not listed individually, by keyword. " +
			"Returns each matching tool's name, description and input schema; then run one with " + CallToolName + "." + servers,
		Parameters: searchSchema,
		Kind:       tool.KindSearch,
		ReadOnly:   true,
		Concurrent: true,
	}
}

type hit struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	ReadOnly    bool            `json:"readOnly,omitempty"`
	score       int
}

func (t *searchTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	a, err := tool.DecodeArgs[struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}](call)
	if err != nil {
		return tool.Result{}, err
	}
	limit := a.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	limit = min(limit, maxSearchLimit)
	terms := searchTerms(a.Query)
	query := strings.TrimSpace(a.Query)
	var hits []hit
	var all []string
	for _, rt := range t.m.deferredTools(tool.VisibleFrom(ctx)) {
		info := rt.info
		all = append(all, info.Name)
		score := 0
		if strings.EqualFold(info.Name, query) || strings.EqualFold(rt.name, query) {
			score = 1000
		}
		name := strings.ToLower(info.Name)
		server := strings.ToLower(rt.s.cfg.Name)
		desc := strings.ToLower(info.Description)
		words := searchTerms(rt.s.cfg.Name + " " + rt.name)
		for _, term := range terms {
			switch {
			case contains(words, term):
				score += 10
			case strings.Contains(name, term):
				score += 6
			}
			if strings.Contains(server, term) {
				score += 3
			}
			if strings.Contains(desc, term) {
				score += 2
			}
		}
		if score > 0 {
			hits = append(hits, hit{Name: info.Name, Description: info.Description, InputSchema: info.Parameters, ReadOnly: info.ReadOnly, score: score})
		}
	}
	if len(hits) == 0 {
		sort.Strings(all)
		msg := fmt.Sprintf("No MCP tool matches %q.", a.Query)
		if len(all) > 0 && len(all) <= 200 {
			msg += " Available: " + strings.Join(all, ", ") + "."
		}
		return tool.TextResult(msg), nil
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].Name < hits[j].Name
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	b, err := json.MarshalIndent(hits, "", "  ")
	if err != nil {
		return tool.Result{}, err
	}
	return tool.TextResult(fmt.Sprintf("%d matching MCP tool(s). Run one with %s {\"name\": \"<name>\", \"arguments\": {…}} (arguments must match inputSchema).\n%s",
		len(hits), CallToolName, b)), nil
}

func searchTerms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// deferredTools lists the registered tools hidden behind the search tool
// that visible (the caller's filter; nil: every tool) keeps.
func (m *Manager) deferredTools(visible func(tool.Info) bool) []*mcpTool {
	var out []*mcpTool
	for _, s := range m.snapshot() {
		s.regMu.Lock()
		for name, r := range s.regs {
			if m.isDeferred(name) {
				out = append(out, r.t)
			}
		}
		s.regMu.Unlock()
	}
	// Filters run without the server locks (Manager.Visible takes them).
	out = slices.DeleteFunc(out, func(t *mcpTool) bool { return visible != nil && !visible(t.info) })
	sort.Slice(out, func(i, j int) bool { return out[i].info.Name < out[j].info.Name })
	return out
}

// visibleTool finds a registered MCP tool by registry name among those
// visible keeps (the caller's filter; nil: every tool).
func (m *Manager) visibleTool(name string, visible func(tool.Info) bool) *mcpTool {
	t := m.lookupTool(name)
	if t == nil || (visible != nil && !visible(t.info)) {
		return nil
	}
	return t
}

// lookupTool finds a registered MCP tool by registry name.
func (m *Manager) lookupTool(name string) *mcpTool {
	m.mu.Lock()
	s := m.byTool[name]
	m.mu.Unlock()
	if s == nil {
		return nil
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if r := s.regs[name]; r != nil {
		return r.t
	}
	return nil
}

// callTool runs a deferred MCP tool by name.
type callTool struct {
	m     *Manager
	valid schemaCache
}

var callSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"name":{"type":"string","description":"The MCP tool's full name as mcp_tool_search returned it (mcp__<server>__<tool>)"},` +
	`"arguments":{"type":"object","description":"The tool's arguments, matching its inputSchema"}},` +
	`"required":["name"],"additionalProperties":false}`)

func (t *callTool) Info() tool.Info {
	return tool.Info{
		Name:        CallToolName,
		Description: "Run an MCP tool found with " + SearchToolName + ", by its full name, with arguments matching its input schema.",
		Parameters:  callSchema,
		Kind:        tool.KindOther,
	}
}

type callArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

func parseCallArgs(call tool.Call) (callArgs, error) {
	a, err := tool.DecodeArgs[callArgs](call)
	if err != nil {
		return a, err
	}
	if a.Name == "" {
		return a, tool.ArgsError(call.Name, "name is required")
	}
	if len(a.Arguments) == 0 || string(a.Arguments) == "null" {
		a.Arguments = json.RawMessage(`{}`)
	}
	return a, nil
}

func (t *callTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	a, err := parseCallArgs(call)
	if err != nil {
		return tool.Result{}, err
	}
	// The caller's filter (another session's servers are not its own)
	// holds for the tools run through mcp_call as for direct calls.
	visible := tool.VisibleFrom(ctx)
	target := t.m.visibleTool(a.Name, visible)
	if target == nil {
		return tool.ErrorResult(fmt.Sprintf("Error: no MCP tool %q; find tools with %s and pass the full name it returns", a.Name, SearchToolName)), nil
	}
	inner := tool.Call{ID: call.ID, Name: a.Name, Args: a.Arguments, Raw: string(a.Arguments), Host: call.Host}
	if !t.m.takeVetted(call, a.Name) {
		// The gate did not see this call (a listener outside it answered):
		// decide here, failing closed on ask.
		p := t.m.o.Tools.Prepare(ctx, inner, tool.ExecOptions{Visible: visible})
		switch p.Decision.Kind {
		case tool.Deny:
			return tool.ErrorResult("Error: " + p.Decision.Reason), nil
		case tool.Ask:
			return tool.ErrorResult(fmt.Sprintf("Error: %s needs approval (%s); allow it in the permission settings", a.Name, p.Decision.Reason)), nil
		}
		inner = p.Call
	}
	if err := t.valid.validate(target.info.Name, target.info.Parameters, inner.Args); err != nil {
		return tool.Result{}, err
	}
	return target.Run(ctx, inner)
}

// gate runs permission checks and pre-execute listeners for the tool an
// mcp_call names, as if the model had called it directly, and folds the
// verdict into the mcp_call's: the stricter of the two wins, and a
// rewrite of the inner arguments becomes a rewrite of mcp_call's.
func (m *Manager) gate(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
	if c.Name != CallToolName {
		return next(ctx, c)
	}
	outer, err := next(ctx, c)
	if err != nil || outer.Kind == tool.Deny {
		return outer, err
	}
	eff := c.Args
	if outer.Args != nil {
		eff = outer.Args
	}
	a, perr := parseCallArgs(tool.Call{Name: c.Name, Args: eff, Raw: c.Raw})
	visible := tool.VisibleFrom(ctx)
	if perr != nil || m.visibleTool(a.Name, visible) == nil {
		return outer, nil // mcp_call reports the problem
	}
	inner := tool.Call{ID: c.ID, Name: a.Name, Args: a.Arguments, Raw: string(a.Arguments), Host: c.Host}
	p := m.o.Tools.Prepare(ctx, inner, tool.ExecOptions{Visible: visible})
	d := p.Decision
	out := outer
	if rank(d.Kind) > rank(out.Kind) {
		out.Kind = d.Kind
	}
	if d.Kind != tool.Allow && d.Reason != "" {
		out.Reason = joinReason(out.Reason, a.Name+": "+d.Reason)
		if out.By == "" || rank(d.Kind) >= rank(outer.Kind) {
			out.By = d.By
		}
	}
	if out.Kind == tool.Deny {
		out.Args = nil
		return out, nil
	}
	if d.Args != nil {
		b, err := json.Marshal(callArgs{Name: a.Name, Arguments: d.Args})
		if err == nil {
			out.Args = b
		}
	}
	m.vet(c, a.Name)
	return out, nil
}

func rank(k tool.DecisionKind) int {
	switch k {
	case tool.Deny:
		return 2
	case tool.Ask:
		return 1
	}
	return 0
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

type vetEntry struct {
	name string
	at   time.Time
}

func vetKey(c tool.Call) string {
	agent := ""
	if c.Host != nil {
		agent = c.Host.AgentID()
	}
	return agent + "\x00" + string(c.ID)
}

// vet records that the gate decided an mcp_call.
func (m *Manager) vet(c tool.Call, name string) {
	now := time.Now()
	m.vetMu.Lock()
	defer m.vetMu.Unlock()
	for k, e := range m.vetted {
		if now.Sub(e.at) > time.Hour {
			delete(m.vetted, k)
		}
	}
	m.vetted[vetKey(c)] = vetEntry{name: name, at: now}
}

func (m *Manager) takeVetted(c tool.Call, name string) bool {
	m.vetMu.Lock()
	defer m.vetMu.Unlock()
	k := vetKey(c)
	e, ok := m.vetted[k]
	delete(m.vetted, k)
	return ok && e.name == name
}

// schemaCache validates arguments of tools run through mcp_call (the
// registry validates direct calls).
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*jsonschema.Resolved
}

func (c *schemaCache) validate(name string, schema, args json.RawMessage) error {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*jsonschema.Resolved{}
	}
	r, ok := c.m[string(schema)]
	c.mu.Unlock()
	if !ok {
		var s jsonschema.Schema
		if err := json.Unmarshal(schema, &s); err != nil {
			return nil // an unreadable schema is the server's to enforce
		}
		res, err := s.Resolve(nil)
		if err != nil {
			return nil
		}
		r = res
		c.mu.Lock()
		c.m[string(schema)] = r
		c.mu.Unlock()
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return tool.ArgsError(name, "arguments are not valid JSON: "+err.Error())
	}
	if err := r.Validate(v); err != nil {
		return tool.ArgsError(name, strings.TrimPrefix(err.Error(), "validating root: "))
	}
	return nil
}
