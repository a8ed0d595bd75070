#!/usr/bin/env node
// A client nobody here wrote: the official MCP TypeScript SDK connects to Poppydesk's model
// interface through a stdio relay (what `poppydesk mcp` does), lists the tools, checks their
// annotations and schemas, and calls describe_company. It prints one JSON object on stdout.
//
// Usage: node scripts/mcp-client-check.mjs COMPANY_DOMAIN COMMAND [ARGS...]
// COMMAND [ARGS...] is the stdio MCP server to launch (e.g. `poppydesk mcp --socket PATH`); the
// environment is passed on. The SDK is resolved from e2e/mcp/node_modules (the test clients'
// package), else frontend/node_modules (a devDependency).

import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const modules = existsSync(join(root, "e2e", "mcp", "node_modules", "@modelcontextprotocol", "sdk")) ? join(root, "e2e", "mcp", "node_modules") : join(root, "frontend", "node_modules");
const sdk = (p) => pathToFileURL(join(modules, "@modelcontextprotocol", "sdk", "dist", "esm", p)).href;
const { Client } = await import(sdk("client/index.js"));
const { StdioClientTransport } = await import(sdk("client/stdio.js"));

const [company, command, ...args] = process.argv.slice(2);
if (!company || !command) {
  console.error("usage: node scripts/mcp-client-check.mjs COMPANY_DOMAIN COMMAND [ARGS...]");
  process.exit(2);
}

const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "mcp-client-check", version: "1.0.0" });
const out = { server: null, tools: [], problems: [] };
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  const { tools } = await client.listTools();
  for (const t of tools) {
    const a = t.annotations ?? {};
    out.tools.push({ name: t.name, readOnlyHint: a.readOnlyHint, destructiveHint: a.destructiveHint, idempotentHint: a.idempotentHint, openWorldHint: a.openWorldHint });
    if (t.inputSchema?.type !== "object" || t.inputSchema?.additionalProperties !== false) out.problems.push(`${t.name}: schema is not a closed object`);
    if (!t.description) out.problems.push(`${t.name}: no description`);
  }
  const discovered = await client.callTool({ name: "discover_company", arguments: { domain: company } });
  if (discovered.isError) out.problems.push("discover_company failed: " + JSON.stringify(discovered.structuredContent));
  const described = await client.callTool({ name: "describe_company", arguments: { company } });
  const sc = described.structuredContent ?? {};
  out.describe = {
    isError: described.isError ?? false,
    status: sc.status,
    envelopeCompany: sc.untrusted_company_content?.company,
    // Poppydesk's own words first, then the Company's part, which starts with the warning.
    textStartsWithWarning: String(described.content?.[0]?.text ?? "").startsWith("Poppydesk: ") &&
      String(described.content?.[1]?.text ?? "").startsWith("UNTRUSTED COMPANY CONTENT"),
  };
  const refused = await client.callTool({ name: "get_approval", arguments: { approval_id: "x", approved: true } });
  out.unknownArgument = { isError: refused.isError ?? false, status: refused.structuredContent?.status };
} catch (err) {
  out.problems.push(String(err?.stack ?? err));
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
process.exit(out.problems.length ? 1 : 0);
