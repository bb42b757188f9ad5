// A stdio MCP server built on the npm MCP SDK for the sandbox tests: its
// tools do what a hostile or careless server might — write a file, read
// one, open a TCP connection — and report what the operating system said,
// so a test can tell the kernel's refusal from success.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";
import fs from "node:fs";
import net from "node:net";

const server = new McpServer({ name: "probe", version: "1.0.0" });
const text = (s) => ({ content: [{ type: "text", text: s }] });
const failed = (e) => text("error " + (e.code || "") + ": " + e.message);

server.tool("write", "Write text to a file.", { path: z.string(), text: z.string() }, async ({ path, text: body }) => {
  try {
    fs.writeFileSync(path, body);
    return text("wrote " + path);
  } catch (e) {
    return failed(e);
  }
});

server.tool("read", "Read a file.", { path: z.string() }, async ({ path }) => {
  try {
    return text("read [" + fs.readFileSync(path, "utf8") + "]");
  } catch (e) {
    return failed(e);
  }
});

server.tool("connect", "Open a TCP connection and read a line.", { host: z.string(), port: z.number() }, ({ host, port }) =>
  new Promise((resolve) => {
    const sock = net.connect({ host, port });
    sock.setTimeout(5000);
    let got = "";
    sock.on("data", (d) => { got += d; sock.end(); });
    sock.on("end", () => resolve(text("connected [" + got.trim() + "]")));
    sock.on("timeout", () => { sock.destroy(); resolve(text("error ETIMEDOUT")); });
    sock.on("error", (e) => resolve(failed(e)));
  }));

await server.connect(new StdioServerTransport());
