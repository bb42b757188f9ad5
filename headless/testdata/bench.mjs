// Times the Claude Agent SDK's query() with an executable: dsh, or the
// Claude Code binary the SDK bundles. Usage: node bench.mjs EXECUTABLE N
// PROMPT; prints {"ms": [...]} with the wall time of each query, from
// query() to its last message.
import { query } from "@anthropic-ai/claude-agent-sdk";

const [exe, n, prompt] = process.argv.slice(2);
const options = { cwd: process.env.WORKDIR, env: { ...process.env }, allowedTools: ["Read"] };
if (exe !== "bundled") options.pathToClaudeCodeExecutable = exe;
const ms = [];
let first;
const stderr = [];
options.stderr = (s) => stderr.push(s);
try {
  for (let i = 0; i < Number(n); i++) {
    const t0 = performance.now();
    let result;
    for await (const m of query({ prompt, options })) if (m.type === "result") result = m;
    ms.push(performance.now() - t0);
    if (!result || result.is_error) throw new Error("query failed: " + JSON.stringify(result));
    if (i === 0) first = { num_turns: result.num_turns, result: result.result };
  }
  process.stdout.write(JSON.stringify({ ms, first }) + "\n");
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e?.stack || e), stderr: stderr.join("").slice(-4000), ms }) + "\n");
  process.exitCode = 1;
}
