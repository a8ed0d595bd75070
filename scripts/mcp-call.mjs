#!/usr/bin/env node
// Calls one tool of Poppydesk's model interface with the official MCP TypeScript SDK, through a
// stdio MCP server command (e.g. `poppydesk mcp --socket PATH`), and prints its structured
// result as JSON. The desktop smoke test uses it to make the model's controlled browser open a
// page of the demo's reference Company.
//
// Usage: node scripts/mcp-call.mjs TOOL ARGUMENTS_JSON COMMAND [ARGS...]
// The SDK is resolved from e2e/mcp/node_modules, else frontend/node_modules.

import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const modules = existsSync(join(root, "e2e", "mcp", "node_modules", "@modelcontextprotocol", "sdk")) ? join(root, "e2e", "mcp", "node_modules") : join(root, "frontend", "node_modules");
const sdk = (p) => pathToFileURL(join(modules, "@modelcontextprotocol", "sdk", "dist", "esm", p)).href;
const { Client } = await import(sdk("client/index.js"));
const { StdioClientTransport } = await import(sdk("client/stdio.js"));

const [tool, argsJSON, command, ...args] = process.argv.slice(2);
if (!tool || !argsJSON || !command) {
  console.error("usage: node scripts/mcp-call.mjs TOOL ARGUMENTS_JSON COMMAND [ARGS...]");
  process.exit(2);
}
const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "poppydesk-smoke", version: "1.0.0" });
try {
  await client.connect(transport);
  const res = await client.callTool({ name: tool, arguments: JSON.parse(argsJSON) }, undefined, { timeout: 120000 });
  console.log(JSON.stringify(res.structuredContent ?? {}));
  await client.close();
  process.exit(res.isError ? 1 : 0);
} catch (err) {
  console.error(String(err));
  process.exit(1);
}
