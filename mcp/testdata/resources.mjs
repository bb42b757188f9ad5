// A stdio MCP server on the npm MCP SDK's low-level Server, for the
// resource tests. Its mode (the first argument) picks what it offers:
//   pages  – five resources served two per page of resources/list (a text
//            note, a larger text, a PNG blob, a binary blob, a JSON record)
//   failing – the resources capability, but resources/list answers an error
//   none   – tools only (no resources capability)
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  ListResourcesRequestSchema,
  ReadResourceRequestSchema,
  ListToolsRequestSchema,
  CallToolRequestSchema,
  McpError,
  ErrorCode,
} from "@modelcontextprotocol/sdk/types.js";

const mode = process.argv[2] || "pages";
// A 1×1 PNG (the bytes a test compares).
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
const resources = [
  { uri: "notes://release/plan", name: "release-plan", title: "Release plan", mimeType: "text/plain",
    text: "Release plan: ship the kumquat build on Friday.\nFreeze on Thursday.\n" },
  { uri: "notes://release/long", name: "long-notes", mimeType: "text/plain", text: "long line of notes\n".repeat(20000) },
  { uri: "img://pixel.png", name: "pixel", mimeType: "image/png", blob: png },
  { uri: "bin://firmware.bin", name: "firmware", mimeType: "application/octet-stream", blob: Buffer.from([0, 1, 2, 3, 254, 255]) },
  { uri: "db://users/42", name: "user-42", mimeType: "application/json", text: '{"id":42,"name":"Ada"}' },
];
const pageSize = 2;

const caps = { tools: {} };
if (mode !== "none") caps.resources = {};
const server = new Server({ name: "resources-" + mode, version: "1.0.0" }, { capabilities: caps });

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: "ping", description: "Answer pong.", inputSchema: { type: "object", properties: {} } }],
}));
server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: "text", text: "pong" }] }));

if (mode !== "none") {
  server.setRequestHandler(ListResourcesRequestSchema, async (req) => {
    if (mode === "failing") throw new McpError(ErrorCode.InternalError, "the resource index is corrupt");
    const start = Number(req.params?.cursor || 0);
    const page = resources.slice(start, start + pageSize).map(({ uri, name, title, mimeType }) => ({ uri, name, title, mimeType }));
    const next = start + pageSize < resources.length ? String(start + pageSize) : undefined;
    return next ? { resources: page, nextCursor: next } : { resources: page };
  });
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
    const r = resources.find((r) => r.uri === req.params.uri);
    if (!r) throw new McpError(ErrorCode.InvalidParams, "no resource " + req.params.uri);
    if (r.blob) return { contents: [{ uri: r.uri, mimeType: r.mimeType, blob: r.blob.toString("base64") }] };
    return { contents: [{ uri: r.uri, mimeType: r.mimeType, text: r.text }] };
  });
}

await server.connect(new StdioServerTransport());
