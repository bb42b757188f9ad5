// Drives dsh with the official Claude Agent SDK (@anthropic-ai/claude-agent-sdk)
// as Claude Code would be driven. Usage: node sdk.mjs SCENARIO; the Go test
// (sdk_test.go) sets DSH_BIN, the environment for dsh (DSH_HOME, the fake
// model's URL) and WORKDIR, and reads one JSON object from stdout: the
// messages the SDK yielded and what the callbacks saw.
import { query, tool, createSdkMcpServer } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";
import fs from "node:fs";
import path from "node:path";

const scenario = process.argv[2];
const bin = process.env.DSH_BIN;
const cwd = process.env.WORKDIR;
const base = {
  pathToClaudeCodeExecutable: bin,
  cwd,
  env: { ...process.env },
  stderr: (s) => stderr.push(s),
};
const stderr = [];
let stage = "";
const seen = { canUseTool: [], hooks: [], mcpCalls: [] };

async function collect(q, onMessage) {
  const out = [];
  for await (const m of q) {
    out.push(m);
    if (onMessage) await onMessage(m, q);
  }
  return out;
}

// An input stream the scenario feeds one message at a time.
function channel() {
  const queue = [];
  let wake;
  let closed = false;
  return {
    push(text, uuid) {
      const m = { type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" };
      if (uuid) m.uuid = uuid;
      queue.push(m);
      wake?.();
    },
    close() { closed = true; wake?.(); },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (queue.length) yield queue.shift();
        if (closed) return;
        await new Promise((r) => (wake = r));
        wake = undefined;
      }
    },
  };
}

const scenarios = {
  async query() {
    const q = query({ prompt: "say hello", options: { ...base, includePartialMessages: true } });
    return { messages: await collect(q) };
  },

  async multiturn() {
    const input = channel();
    input.push("first: remember the number 7");
    const q = query({ prompt: input, options: { ...base } });
    let results = 0;
    const messages = await collect(q, (m) => {
      if (m.type === "result") {
        results++;
        if (results === 1) input.push("second: what was the number?");
        else input.close();
      }
    });
    return { messages };
  },

  async canusetool() {
    const q = query({
      prompt: "make the files",
      options: {
        ...base,
        canUseTool: async (name, input, opts) => {
          seen.canUseTool.push({ name, input, toolUseID: opts.toolUseID });
          if (String(input.file_path).endsWith("denied.txt")) {
            return { behavior: "deny", message: "no denied.txt, please" };
          }
          return { behavior: "allow", updatedInput: { ...input, content: "rewritten" } };
        },
      },
    });
    return { messages: await collect(q) };
  },

  async hook() {
    const q = query({
      prompt: "touch the file",
      options: {
        ...base,
        allowedTools: ["Bash(touch:*)"],
        hooks: {
          PreToolUse: [{
            matcher: "Bash",
            hooks: [async (input, toolUseID) => {
              seen.hooks.push({ event: input.hook_event_name, tool: input.tool_name, command: input.tool_input?.command, toolUseID });
              return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "blocked by the SDK hook" } };
            }],
          }],
        },
      },
    });
    return { messages: await collect(q) };
  },

  async mcp() {
    const calc = createSdkMcpServer({
      name: "calc",
      version: "1.0.0",
      tools: [
        tool("add", "Add two numbers", { a: z.number(), b: z.number() }, async ({ a, b }) => {
          seen.mcpCalls.push({ a, b });
          return { content: [{ type: "text", text: String(a + b) }] };
        }),
      ],
    });
    const q = query({ prompt: "add 2 and 3", options: { ...base, mcpServers: { calc }, allowedTools: ["mcp__calc__add"] } });
    return { messages: await collect(q) };
  },

  async interrupt() {
    const input = channel();
    input.push("sleep for a long time");
    const q = query({ prompt: input, options: { ...base, allowedTools: ["Bash(sleep:*)"] } });
    let interrupted = false;
    const started = Date.now();
    const messages = await collect(q, async (m, q) => {
      if (!interrupted && m.type === "assistant" && m.message.content.some((b) => b.type === "tool_use")) {
        interrupted = true;
        // Give the command a moment to start, then stop the turn.
        await new Promise((r) => setTimeout(r, 300));
        await q.interrupt();
      }
      if (m.type === "result") input.close();
    });
    return { messages, elapsedMs: Date.now() - started };
  },

  async agents() {
    const q = query({
      prompt: "ask the reviewer",
      options: { ...base, allowedTools: ["Agent"], agents: { reviewer: { description: "Reviews changes", prompt: "You are the reviewer agent.", tools: ["Read"] } } },
    });
    const init = await q.initializationResult?.();
    return { messages: await collect(q), agents: init?.agents };
  },

  async prompttool() {
    const perm = createSdkMcpServer({
      name: "perm",
      version: "1.0.0",
      tools: [
        tool("approve", "Answer permission questions", { tool_name: z.string(), input: z.any(), tool_use_id: z.string().optional() }, async (args) => {
          seen.canUseTool.push(args);
          const answer = { behavior: "allow", updatedInput: { ...args.input, content: "from the prompt tool" } };
          return { content: [{ type: "text", text: JSON.stringify(answer) }] };
        }),
      ],
    });
    const q = query({ prompt: "write it", options: { ...base, mcpServers: { perm }, permissionPromptToolName: "mcp__perm__approve" } });
    return { messages: await collect(q) };
  },

  async controls() {
    const input = channel();
    input.push("write first.txt");
    const q = query({ prompt: input, options: { ...base } });
    let results = 0;
    const messages = await collect(q, async (m, q) => {
      if (m.type === "result") {
        results++;
        if (results === 1) {
          await q.setPermissionMode("acceptEdits");
          await q.setModel("anthropic/claude-haiku-4-5");
          input.push("write second.txt");
        } else input.close();
      }
    });
    return { messages };
  },

  // File checkpoints as the SDK's docs use them: enableFileCheckpointing,
  // replayed user messages for their uuids, rewindFiles (a dry run, a
  // refusal over the user's own edit, an unknown id, a client's uuid),
  // then a resumed process that rewinds to the first message.
  async rewind() {
    try {
      return await this.rewindInner();
    } catch (e) {
      throw new Error(`${e} at stage ${stage} (stderr ${stderr.join("")})`);
    }
  },

  async rewindInner() {
    const opts = { ...base, enableFileCheckpointing: true, permissionMode: "bypassPermissions", extraArgs: { "replay-user-messages": null } };
    const made = path.join(cwd, "made.txt");
    const input = channel();
    input.push("make a file");
    const q = query({ prompt: input, options: opts });
    const replays = [];
    const calls = {};
    let results = 0;
    const messages_so_far = [];
    const messages = await collect(q, async (m, q) => {
      messages_so_far.push(m);
      if (m.type === "user" && m.isReplay) replays.push({ uuid: m.uuid, text: JSON.stringify(m.message.content) });
      if (m.type !== "result") return;
      results++;
      if (results === 1) {
        input.push("edit keep", "11111111-2222-4333-8444-555555555555");
        return;
      }
      calls.keepAfter = fs.readFileSync(path.join(cwd, "keep.txt"), "utf8");
      stage = "dry"; calls.dry = await q.rewindFiles(replays[0].uuid, { dryRun: true });
      stage = "client"; calls.client = await q.rewindFiles("11111111-2222-4333-8444-555555555555", { dryRun: true });
      stage = "unknown"; calls.unknown = await q.rewindFiles("00000000-0000-4000-8000-000000000000", { dryRun: true });
      if (!fs.existsSync(made)) throw new Error("the agent made no made.txt; messages: " + JSON.stringify(messages_so_far));
      const agents = fs.readFileSync(made, "utf8");
      fs.writeFileSync(made, "the user's edit\n");
      stage = "refused"; calls.refused = await q.rewindFiles(replays[0].uuid);
      fs.writeFileSync(made, agents);
      input.close();
    });
    const id = messages.find((m) => m.type === "result").session_id;
    const again = channel();
    again.push("status?");
    const resumed = await collect(query({ prompt: again, options: { ...opts, resume: id } }), async (m, q) => {
      if (m.type !== "result") return;
      stage = "resumed"; calls.resumed = await q.rewindFiles(replays[0].uuid);
      again.close();
    });
    return { messages, resumed, replays, calls, id };
  },

  async resume() {
    const first = await collect(query({ prompt: "remember the word zebra", options: { ...base } }));
    const id = first.find((m) => m.type === "result").session_id;
    const second = await collect(query({ prompt: "which word?", options: { ...base, resume: id } }));
    return { messages: first, resumed: second, id };
  },
};

try {
  const out = await scenarios[scenario]();
  process.stdout.write(JSON.stringify({ ...out, seen, stderr: stderr.join("") }) + "\n");
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e?.stack || e), seen, stderr: stderr.join("") }) + "\n");
  process.exitCode = 1;
}
