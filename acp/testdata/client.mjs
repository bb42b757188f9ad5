// An ACP client for dsh's integration tests, built on the reference client
// library (@agentclientprotocol/sdk). It spawns `$DSH_BIN acp` over stdio
// through ClientSideConnection, runs one scenario and prints the result as
// one JSON object on stdout for the Go test to assert.
//
//   node client.mjs <scenario>
//
// Environment: DSH_BIN (the binary), DSH_ARGS (extra flags, a JSON list),
// DSH_CWD (the workspace), SESSION_ID (for load), PROMPTS and ANSWERS (the
// prompts scenario), plus whatever dsh itself needs (DSH_HOME, the model
// server).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const scenario = process.argv[2];
const cwd = process.env.DSH_CWD;

// Recorder collects session updates per session, in arrival order.
class Recorder {
  constructor() {
    this.updates = new Map();
    this.waiters = [];
    this.permissionRequests = [];
    this.answer = () => "allow_once";
  }
  list(id) {
    if (!this.updates.has(id)) this.updates.set(id, []);
    return this.updates.get(id);
  }
  async sessionUpdate(params) {
    this.list(params.sessionId).push(params.update);
    this.waiters = this.waiters.filter((w) => !w(params));
  }
  // until resolves when an update of the session satisfies pred.
  until(id, pred) {
    if (this.list(id).some(pred)) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push((p) => {
        if (p.sessionId === id && pred(p.update)) {
          resolve();
          return true;
        }
        return false;
      });
    });
  }
  async requestPermission(params) {
    this.permissionRequests.push(params);
    const optionId = this.answer(params);
    if (optionId === "cancelled") return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId } };
  }
  async readTextFile(params) {
    throw acp.RequestError.resourceNotFound(params.path);
  }
  async writeTextFile() {
    throw acp.RequestError.internalError({ details: "not offered" });
  }
}

function chunks(updates, kind = "agent_message_chunk") {
  return updates.filter((u) => u.sessionUpdate === kind).map((u) => u.content.text);
}

function statuses(updates, id) {
  return updates
    .filter((u) => (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId === id && u.status)
    .map((u) => u.status);
}

const text = (t) => [{ type: "text", text: t }];

async function main() {
  // DSH_ARGS (a JSON list) adds flags to `dsh acp`.
  const args = ["acp", ...JSON.parse(process.env.DSH_ARGS ?? "[]")];
  const child = spawn(process.env.DSH_BIN, args, { stdio: ["pipe", "pipe", "pipe"], cwd });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const rec = new Recorder();
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const conn = new acp.ClientSideConnection(() => rec, stream);
  const out = { scenario };
  try {
    out.initialize = await conn.initialize({
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    const newSession = async () => (await conn.newSession({ cwd, mcpServers: [] })).sessionId;
    switch (scenario) {
      case "stream": {
        const id = await newSession();
        out.sessionId = id;
        const r = await conn.prompt({ sessionId: id, prompt: text("say hello") });
        out.stopReason = r.stopReason;
        out.usage = r.usage ?? null;
        out.chunks = chunks(rec.list(id));
        out.kinds = rec.list(id).map((u) => u.sessionUpdate);
        break;
      }
      case "permission": {
        const id = await newSession();
        out.sessionId = id;
        rec.answer = () => "reject_once";
        out.rejected = (await conn.prompt({ sessionId: id, prompt: text("write it") })).stopReason;
        rec.answer = () => "allow_once";
        out.allowed = (await conn.prompt({ sessionId: id, prompt: text("write it again") })).stopReason;
        out.permissionRequests = rec.permissionRequests.map((p) => ({
          toolCallId: p.toolCall.toolCallId,
          title: p.toolCall.title,
          kinds: p.options.map((o) => o.kind),
        }));
        out.statuses = { call_1: statuses(rec.list(id), "call_1"), call_2: statuses(rec.list(id), "call_2") };
        out.diff = rec
          .list(id)
          .filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "call_2" && u.status === "completed")
          .flatMap((u) => u.content ?? []);
        break;
      }
      case "cancel": {
        const id = await newSession();
        out.sessionId = id;
        const pending = conn.prompt({ sessionId: id, prompt: text("talk at length") });
        await rec.until(id, (u) => u.sessionUpdate === "agent_message_chunk");
        await conn.cancel({ sessionId: id });
        out.stopReason = (await pending).stopReason;
        out.chunks = chunks(rec.list(id));
        // The session still serves prompts.
        out.after = (await conn.prompt({ sessionId: id, prompt: text("still there?") })).stopReason;
        break;
      }
      case "load": {
        const id = process.env.SESSION_ID;
        const resp = await conn.loadSession({ sessionId: id, cwd, mcpServers: [] });
        // Everything replayed arrived before the response.
        out.replay = rec.list(id).map((u) => ({
          kind: u.sessionUpdate,
          text: u.content?.text ?? null,
          toolCallId: u.toolCallId ?? null,
          status: u.status ?? null,
        }));
        out.modes = resp.modes ?? null;
        out.listed = (await conn.listSessions({ cwd })).sessions.map((s) => s.sessionId);
        break;
      }
      case "replay": {
        // Loads SESSION_ID (with _meta {dsh: {replay: REPLAY}} when set) and
        // returns every update the replay sent, as the client received it.
        const id = process.env.SESSION_ID;
        const req = { sessionId: id, cwd, mcpServers: [] };
        if (process.env.REPLAY) req._meta = { dsh: { replay: process.env.REPLAY } };
        await conn.loadSession(req);
        out.updates = rec.list(id);
        break;
      }
      case "concurrent": {
        const [a, b] = [await newSession(), await newSession()];
        const [ra, rb] = await Promise.all([
          conn.prompt({ sessionId: a, prompt: text("question A") }),
          conn.prompt({ sessionId: b, prompt: text("question B") }),
        ]);
        out.a = { stop: ra.stopReason, text: chunks(rec.list(a)).join("") };
        out.b = { stop: rb.stopReason, text: chunks(rec.list(b)).join("") };
        break;
      }
      case "prompts": {
        // Runs PROMPTS (a JSON list) in one session, the session SESSION_ID
        // loaded first when set, answering permission requests with
        // ANSWERS (a JSON list of option ids, in order; then reject_once).
        let id = process.env.SESSION_ID;
        if (id) await conn.loadSession({ sessionId: id, cwd, mcpServers: [] });
        else id = await newSession();
        out.sessionId = id;
        const answers = JSON.parse(process.env.ANSWERS ?? "[]");
        rec.answer = () => answers.shift() ?? "reject_once";
        const from = rec.list(id).length; // after the replay
        out.stops = [];
        out.said = []; // the agent's text during each prompt
        for (const p of JSON.parse(process.env.PROMPTS ?? "[]")) {
          const before = rec.list(id).length;
          out.stops.push((await conn.prompt({ sessionId: id, prompt: text(p) })).stopReason);
          out.said.push(chunks(rec.list(id).slice(before)).join(""));
        }
        out.permissionRequests = rec.permissionRequests.map((p) => ({
          toolCallId: p.toolCall.toolCallId,
          title: p.toolCall.title ?? null,
          kinds: p.options.map((o) => o.kind),
          optionIds: p.options.map((o) => o.optionId),
          text: (p.toolCall.content ?? []).map((c) => c.content?.text ?? "").join(""),
          sessionRules: p.toolCall._meta?.dsh?.sessionRules ?? null,
        }));
        out.commands = rec
          .list(id)
          .filter((u) => u.sessionUpdate === "available_commands_update")
          .flatMap((u) => u.availableCommands.map((c) => ({ name: c.name, hint: c.input?.hint ?? null })));
        const live = rec.list(id).slice(from);
        out.statuses = {};
        for (const u of live) {
          if ((u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.status) {
            (out.statuses[u.toolCallId] ??= []).push(u.status);
          }
        }
        out.modes = null;
        break;
      }
      default:
        throw new Error(`unknown scenario ${scenario}`);
    }
  } catch (err) {
    out.error = String(err?.message ?? err) + (err?.data ? " " + JSON.stringify(err.data) : "");
  }
  child.stdin.end(); // the editor goes away: dsh disposes its agents and exits
  const timer = setTimeout(() => child.kill("SIGKILL"), 20000);
  out.exit = await exited;
  clearTimeout(timer);
  out.stderr = stderr;
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ scenario, error: String(err?.stack ?? err) }) + "\n");
  process.exit(1);
});
