// Drives `dsh mcp serve` with the official MCP TypeScript SDK client.
// Usage: node client.mjs stdio|http; the Go test sets DSH_BIN, WORKDIR,
// the environment for dsh and, for http, DSH_MCP_URL and DSH_MCP_TOKEN.
// Prints one JSON report.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const mode = process.argv[2];
const cwd = process.env.WORKDIR;
const report = { progress: [], elicitations: [] };

const client = new Client({ name: "dsh-test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  report.elicitations.push(req.params.message);
  return { action: "accept", content: { decision: "allow" } };
});

let transport;
if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(process.env.DSH_MCP_URL), {
    requestInit: { headers: { Authorization: "Bearer " + process.env.DSH_MCP_TOKEN } },
  });
} else {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  transport = new StdioClientTransport({ command: process.env.DSH_BIN, args: ["mcp", "serve", "--allowedTools", "Bash(sleep:*)"], env, cwd, stderr: "pipe" });
}

const call = (args, opts = {}) =>
  client.callTool({ name: "dsh", arguments: { cwd, ...args } }, undefined, {
    timeout: 60000,
    onprogress: (p) => report.progress.push(p.message),
    ...opts,
  });

try {
  await client.connect(transport);
  report.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, required: t.inputSchema.required }));
  const first = await call({ prompt: "hello" });
  report.first = first.structuredContent;
  const second = await call({ prompt: "hello again", session_id: first.structuredContent.session_id });
  report.second = second.structuredContent;
  if (mode !== "http") {
    // An approval goes to this client through elicitation.
    const asked = await call({ prompt: "ask first", session_id: first.structuredContent.session_id });
    report.asked = asked.structuredContent;
    // Cancelling a call stops the agent.
    const ac = new AbortController();
    const started = Date.now();
    const p = call({ prompt: "sleep now", session_id: first.structuredContent.session_id }, {
      signal: ac.signal,
      onprogress: (pr) => {
        report.progress.push(pr.message);
        if (String(pr.message).includes("running Bash")) setTimeout(() => ac.abort(), 200);
      },
    });
    try {
      await p;
      report.cancel = "completed";
    } catch (e) {
      report.cancel = String(e?.name) + ": " + String(e?.message) + (ac.signal.aborted ? " (AbortError: the signal was aborted)" : "");
    }
    report.cancelMs = Date.now() - started;
    // The server goes on: the session answers again.
    const after = await call({ prompt: "hello after", session_id: first.structuredContent.session_id });
    report.after = after.structuredContent;
  }
  await client.close();
  process.stdout.write(JSON.stringify(report) + "\n");
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e?.stack || e), ...report }) + "\n");
  process.exitCode = 1;
}
