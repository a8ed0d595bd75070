#!/usr/bin/env node
// Checks one MCP client configuration file that `poppydesk mcp setup CLIENT` wrote: the exact
// keys of the client's documented format (the same formats as app/cli/mcp_setup_test.go), then
// launches the server exactly as the file says, the way the client would, with the official MCP
// TypeScript SDK, and lists its tools. It prints one JSON object on stdout and exits 1 on a problem.
//
// Usage: node scripts/mcp-config-check.mjs CLIENT FILE COMMAND
// COMMAND is the absolute path the entry must name (the installed /usr/bin/poppydesk-mcp, which
// takes no arguments, or /usr/bin/poppydesk, which takes "mcp"). The server gets what the SDK
// gives a server whose entry names no more than the entry's "env" (HOME, LOGNAME, PATH, SHELL,
// TERM and USER), as clients built on the SDK start it: not the desktop session's
// XDG_RUNTIME_DIR, DISPLAY or session bus.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const sdk = (p) => pathToFileURL(join(root, "frontend", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", p)).href;

// The documented formats: the key holding the servers, and the entry's keys in order.
const formats = {
  "claude-code": { key: "mcpServers", entry: ["type", "command", "args", "env"], type: "stdio" },
  "claude-desktop": { key: "mcpServers", entry: ["command", "args"] },
  vscode: { key: "servers", entry: ["type", "command", "args"], type: "stdio" },
  cursor: { key: "mcpServers", entry: ["command", "args"] },
};

const [client, file, command] = process.argv.slice(2);
const format = formats[client];
if (!format || !file || !command) {
  console.error("usage: node scripts/mcp-config-check.mjs CLIENT FILE COMMAND   (CLIENT: " + Object.keys(formats).join(", ") + ")");
  process.exit(2);
}

const out = { client, file, problems: [] };
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
let entry;
try {
  const config = JSON.parse(readFileSync(file, "utf8"));
  entry = config?.[format.key]?.poppydesk;
  if (!entry) throw new Error(`no ${format.key}.poppydesk in ${file}`);
  out.keys = Object.keys(entry);
  if (!same(out.keys, format.entry)) out.problems.push(`entry keys ${JSON.stringify(out.keys)}, want ${JSON.stringify(format.entry)}`);
  if (format.type && entry.type !== format.type) out.problems.push(`type ${JSON.stringify(entry.type)}, want "stdio"`);
  if (entry.command !== command) out.problems.push(`command ${JSON.stringify(entry.command)}, want ${JSON.stringify(command)}`);
  const args = command.endsWith("/poppydesk-mcp") ? [] : ["mcp"];
  if (!same(entry.args, args)) out.problems.push(`args ${JSON.stringify(entry.args)}, want ${JSON.stringify(args)}`);
  if ("env" in format.entry && !same(entry.env, {})) out.problems.push(`env ${JSON.stringify(entry.env)}, want {}`);
} catch (err) {
  out.problems.push(String(err?.message ?? err));
}

if (entry && out.problems.length === 0) {
  const { Client } = await import(sdk("client/index.js"));
  const { StdioClientTransport } = await import(sdk("client/stdio.js"));
  const transport = new StdioClientTransport({ command: entry.command, args: entry.args, env: entry.env, stderr: "inherit" });
  const mcp = new Client({ name: "mcp-config-check-" + client, version: "1.0.0" });
  try {
    await mcp.connect(transport);
    out.server = mcp.getServerVersion()?.name;
    const { tools } = await mcp.listTools();
    out.tools = tools.length;
    if (tools.length === 0) out.problems.push("the server lists no tools");
  } catch (err) {
    out.problems.push("launching the configured server failed: " + String(err?.message ?? err));
  } finally {
    await mcp.close().catch(() => {});
  }
}
console.log(JSON.stringify(out));
process.exit(out.problems.length ? 1 : 0);
