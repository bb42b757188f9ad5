package acp

import (
	"context"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/tool"
)

// mcpConfigs maps the MCP servers an ACP client passes (session/new, load,
// resume) onto the manager's configs. Variants dsh cannot run (the
// unstable ACP-channel transport) are reported and left out.
func mcpConfigs(servers []sdk.McpServer) ([]mcp.ServerConfig, error) {
	var out []mcp.ServerConfig
	var bad []string
	for i, s := range servers {
		switch {
		case s.Stdio != nil:
			c := mcp.ServerConfig{Name: s.Stdio.Name, Type: mcp.TransportStdio, Command: s.Stdio.Command, Args: s.Stdio.Args}
			if len(s.Stdio.Env) > 0 {
				c.Env = make(map[string]string, len(s.Stdio.Env))
				for _, e := range s.Stdio.Env {
					c.Env[e.Name] = e.Value
				}
			}
			out = append(out, c)
		case s.Http != nil:
			out = append(out, mcp.ServerConfig{Name: s.Http.Name, Type: mcp.TransportHTTP, URL: s.Http.Url, Headers: headers(s.Http.Headers)})
		case s.Sse != nil:
			out = append(out, mcp.ServerConfig{Name: s.Sse.Name, Type: mcp.TransportSSE, URL: s.Sse.Url, Headers: headers(s.Sse.Headers)})
		default:
			bad = append(bad, fmt.Sprintf("#%d", i))
		}
	}
	for i := range out {
		out[i].Source = mcp.SourceSession
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("unsupported MCP server transport (servers %v): dsh runs stdio, http and sse servers", bad)
	}
	return out, nil
}

func headers(hs []sdk.HttpHeader) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		m[h.Name] = h.Value
	}
	return m
}

// addMCP connects the client's MCP servers for this session: they live
// until the session's scope closes (the session is closed or the
// connection ends). Problems with single servers are logged; the session
// opens all the same, without those servers' tools.
func (r *sess) addMCP(ctx context.Context, servers []sdk.McpServer) {
	if len(servers) == 0 {
		return
	}
	m := r.ws.app.MCP
	if m == nil {
		r.srv.log.Warn("acp: MCP is unavailable; ignoring the client's MCP servers", "session", r.id, "count", len(servers))
		return
	}
	cfgs, err := mcpConfigs(servers)
	if err != nil {
		r.srv.log.Warn("acp: some MCP servers from the client were skipped", "session", r.id, "err", err)
	}
	if len(cfgs) == 0 {
		return
	}
	if err := m.AddSessionServers(ctx, r.scope, cfgs); err != nil {
		r.srv.log.Warn("acp: some MCP servers from the client could not be added", "session", r.id, "err", err)
	}
}

// agentOptions are the workspace's agent options for this session, with a
// tool filter that hides the MCP servers other sessions added.
func (r *sess) agentOptions() agent.Options {
	opts := r.ws.app.AgentOptions(r)
	if m := r.ws.app.MCP; m != nil {
		visible := m.Visible(r.scope)
		if prev := opts.Tools; prev != nil {
			opts.Tools = func(i tool.Info) bool { return prev(i) && visible(i) }
		} else {
			opts.Tools = visible
		}
	}
	return opts
}

// closeScope releases what the session owns (its MCP servers).
func (r *sess) closeScope() {
	if err := r.scope.Close(); err != nil {
		r.srv.log.Debug("acp: closing the session scope", "session", r.id, "err", err)
	}
}
