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
// Nothing waits for a server at start: a headless run's first request goes
// out while servers connect, and a server seen for the first time adds its
// tools once it has listed them. A server that crashes or fails to start is
// restarted with exponential backoff, at most Options.MaxRestarts times in
// a row (a call whose result cannot be decoded is only that call's error:
// the server, whose connection is still up, keeps running); a call made
// while a server starts or restarts waits for it within the call's
// timeout, and once it is given up its tools are unregistered. Start
// failures and give-ups reach Options.Warn (stderr in headless runs, with
// the tail of the server's stderr) and [Manager.Findings] (`dsh doctor`).
// A server that never completed initialize is killed at once when it is
// stopped; a connected one gets the stdio shutdown sequence.
//
// The streamable HTTP and legacy SSE transports are connected with a
// context of the connection's lifetime: the SSE transport's event stream
// lives as long as the connection, not as long as the connect call. Project servers (.mcp.json, project and local settings)
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
// map onto dsh content: text stays text (adjacent text blocks joined with a
// blank line), images become image blocks with data URLs, each beside a
// short note naming the file under Home/mcp-images it was saved to (a model
// without vision, whose adapter leaves images out, reads the note instead of
// base64), resource links and embedded resources become text naming their
// URI, structured content becomes JSON text only when the result has no
// text (servers mirror it as text) or the server's "structuredContent":
// true asks for it, and isError results are tool errors. A result brings at
// most Options.MaxResultChars characters of text into the session (the
// rest is cut, with a note saying how much) and Options.MaxResultImageBytes
// of images (others are replaced by a note).
//
// Lines a stdio server prints on stdout that cannot start a JSON-RPC
// message (banners, log lines) are dropped instead of ending the
// connection; the first is reported through Options.Warn.
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
