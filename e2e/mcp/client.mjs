#!/usr/bin/env node
// A driver for the official MCP TypeScript SDK client, for tests: it launches a stdio MCP server
// (e.g. `poppydesk mcp --socket PATH`), then reads one command per line on stdin and answers each
// with JSON lines on stdout, so a test can act in between (approve in the window while a wait
// runs). The SDK validates every structuredContent against the tool's outputSchema itself (it
// throws when one does not match); the test validates them again with a Go validator.
//
// Usage: node e2e/mcp/client.mjs [--default-env] COMMAND [ARGS...]
//
// The server gets this process's whole environment, or with --default-env what the SDK gives a
// server when its configuration names no environment (getDefaultEnvironment: HOME, LOGNAME,
// PATH, SHELL, TERM and USER), as MCP clients built on the SDK start servers.
//
// Commands (stdin, one JSON object a line):
//   {"op": "list"}                                  -> {"tools": [...], "server": {...}, "instructions": "..."}
//   {"op": "call", "tool": N, "args": {...},
//    "progress": true, "abortOnProgress": true}      -> {"progress": {...}} lines while it runs, then
//                                                      {"result": {...}} or {"error": "...", "code": N}
//   {"op": "close"}                                 -> exits
// Every answer line also has "ms": the milliseconds the command took.

import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = process.argv.slice(2);
const defaultEnv = argv[0] === "--default-env";
const [command, ...args] = defaultEnv ? argv.slice(1) : argv;
if (!command) {
  console.error("usage: node e2e/mcp/client.mjs [--default-env] COMMAND [ARGS...]");
  process.exit(2);
}
const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const client = new Client({ name: "poppydesk-test-ts-client", version: "1.0.0" });
const transport = new StdioClientTransport(defaultEnv ? { command, args, stderr: "inherit" } : { command, args, env: { ...process.env }, stderr: "inherit" });
const start = Date.now();
try {
  await client.connect(transport);
} catch (err) {
  say({ error: String(err?.message ?? err), code: err?.code, ms: Date.now() - start });
  process.exit(1);
}
say({ connected: true, server: client.getServerVersion(), ms: Date.now() - start });

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  const t0 = Date.now();
  try {
    if (cmd.op === "close") break;
    if (cmd.op === "list") {
      const { tools } = await client.listTools();
      say({ tools, server: client.getServerVersion(), instructions: client.getInstructions(), ms: Date.now() - t0 });
      continue;
    }
    if (cmd.op === "call") {
      const abort = new AbortController();
      const options = { signal: abort.signal, timeout: 600000 };
      if (cmd.progress) {
        options.resetTimeoutOnProgress = true;
        options.onprogress = (p) => {
          say({ progress: p, ms: Date.now() - t0 });
          if (cmd.abortOnProgress) abort.abort("cancelled by the test");
        };
      }
      const result = await client.callTool({ name: cmd.tool, arguments: cmd.args ?? {} }, undefined, options);
      say({ result, ms: Date.now() - t0 });
      continue;
    }
    say({ error: "unknown op " + cmd.op, ms: Date.now() - t0 });
  } catch (err) {
    say({ error: String(err?.message ?? err), code: err?.code, ms: Date.now() - t0 });
  }
}
await client.close().catch(() => {});
process.exit(0);
