// Package mcp is dsh's Model Context Protocol client: it runs the MCP
// servers users configure as they do for Claude Code (`mcpServers` in
// settings and in a project's .mcp.json) and registers each server's tools
// in the tool registry as mcp__<server>__<tool>, with the server's JSON
// Schema, Kind other and ReadOnly from the tool's readOnlyHint — so
// permission rules such as "mcp__github__create_issue" or "mcp__github"
// apply to them like to any tool. A server name whose tool part would hold
// "__" or end in "_" is refused: mcp__github__evil__x could then be server
// "github"'s tool or server "github__evil"'s, and fall under "github"'s rules.
//
// # Lifecycle
//
// A [Manager] owns the servers. [Manager.Start] never waits for one:
//
//   - lazy servers (the default) whose tool list is cached in
//     $DSH_HOME/mcp-cache/<server>.json register those tools at once and
//     start on their first call;
//   - eager servers ("startup": "eager") and servers without a cache
//     connect in the background and register their tools when ready (the
//     cache is written after every successful listing).
//
// A server that crashes or fails to start is restarted with exponential
// backoff, at most Options.MaxRestarts times in a row (a call whose result
// cannot be decoded is only that call's error: the server, whose connection
// is still up, keeps running); meanwhile its tools
// answer with an error that says so, and once it is given up its tools are
// unregistered. Project servers (.mcp.json, project and local settings)
// start only when Options.Trusted accepts the project directory. Closing
// the manager stops every server and unregisters its tools; servers added
// for one ACP session ([Manager.AddSessionServers]) stop when that
// session's scope closes.
//
// # Calls
//
// A call forwards the agent's context (cancelling it sends
// notifications/cancelled to the server) under a per-call timeout
// (Options.CallTimeout, or the server's "timeout" in milliseconds). Results
// map onto dsh content: text stays text, images become image blocks with
// data URLs, resource links and embedded resources become text naming their
// URI, structured content becomes JSON text (unless a text block already
// carries it), and isError results are tool errors. A result brings at
// most Options.MaxResultChars characters of text into the session (the
// rest is cut, with a note saying how much) and Options.MaxResultImageBytes
// of images (others are replaced by a note).
//
// Lines a stdio server prints on stdout that cannot start a JSON-RPC
// message (banners, log lines) are dropped and logged instead of ending
// the connection.
//
// notifications/tools/list_changed re-lists the server's tools and updates
// the registry. Servers' instructions (from initialize) form the
// "mcp-instructions" prompt section.
//
// # Tool search
//
// With many tools (more than Options.ToolSearchThreshold, or always with
// ToolSearchOn, or per server with "toolSearch": true) the servers' tools
// stay registered — so permission rules still see them — but are hidden
// from the model's tool list; instead it gets mcp_tool_search (keyword
// search returning names, descriptions and input schemas) and mcp_call
// (runs one by name). mcp_call is gated like a direct call: a pre-execute
// listener runs the registry's guards and pre-execute chain for the named
// tool and keeps the stricter of that verdict and mcp_call's own. Both
// tools hold to the caller's tool filter (tool.VisibleFrom; for an ACP
// session, [Manager.Visible]): a session neither finds nor runs the tools
// of servers other sessions added, and the search tool's description names
// only servers every session sees. The threshold counts the tools one
// caller sees: the global servers' alone, or with one session's servers.
package mcp
