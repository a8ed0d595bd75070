// The body of the approval dialog: what the user reads before deciding. The Company's verified
// name and domain (from discovery, never from the operation), the differences the engine found
// between the terms, the request and the model's intent, what changed since the previous
// revision, the summary (summary.ts), the terms as text rows, the account and Session, and what
// the agent requested.

import type { ApprovalItem } from "../../api";
import { append, el } from "../../dom";
import { hasChanges, renderChanges } from "./changes";
import { renderSummary } from "./summary";
import { itemStateWords } from "./words";

// approvalContent builds the dialog body for item; replaced says it replaces an earlier
// revision on screen.
export function approvalContent(doc: Document, item: ApprovalItem, replaced: boolean): Node[] {
  const nodes: Node[] = [];
  nodes.push(
    el(
      "header",
      { class: "approval-head" },
      el("p", { class: "approval-kicker" }, item.decidable ? "Your approval is needed" : itemStateWords(item)),
      el("h2", { id: "approval-title" }, "Approve at ", el("span", { id: "approval-company" }, item.companyName || item.company), "?"),
      el(
        "p",
        { class: "approval-domain" },
        el("span", { id: "approval-domain" }, item.companyDomain),
        " · name and domain verified by Poppydesk (not from the request)",
      ),
    ),
  );
  if (replaced) {
    nodes.push(
      el(
        "p",
        { class: "approval-notice", id: "approval-new-revision", role: "alert" },
        "The Company sent a new version of these terms. Read them again: an approval covers only the version shown now.",
      ),
    );
  }
  if (item.violation) {
    // The Company broke a rule of the Operations extension (for example other terms under a
    // version it had already used): Poppydesk's words, before anything the Company wrote.
    nodes.push(
      el(
        "section",
        { class: "approval-violation", id: "approval-violation", role: "alert", "aria-labelledby": "violation-title" },
        el("h3", { id: "violation-title" }, "The Company broke the approval rules"),
        el("p", { id: "approval-violation-text" }, item.violation),
      ),
    );
  }
  // The violation is shown above; the other warnings are differences to check.
  const warnings = (item.warnings ?? []).filter((w) => !(item.violation && w.code === "revision_reused"));
  const summaryWarnings = item.current.summary?.warnings ?? [];
  if (warnings.length + summaryWarnings.length > 0) {
    const ul = el("ul", {});
    for (const w of warnings) ul.appendChild(el("li", {}, w.message));
    for (const w of summaryWarnings) ul.appendChild(el("li", {}, w.message));
    nodes.push(
      el(
        "section",
        { class: "approval-warnings", id: "approval-warnings", role: "alert", "aria-labelledby": "warnings-title" },
        el("h3", { id: "warnings-title" }, "Check these differences before you decide"),
        ul,
      ),
    );
  }
  if (hasChanges(item.changes)) nodes.push(renderChanges(item.changes));
  nodes.push(
    el("h3", {}, "What the Company will do"),
    el("div", { id: "approval-summary" }, renderSummary(doc, item.current.summary)),
  );
  const rows = item.current.terms ?? [];
  if (rows.length > 0) {
    const tbody = el("tbody", {});
    for (const r of rows) {
      tbody.appendChild(el("tr", {}, el("th", { scope: "row", class: "mono" }, r.path), el("td", {}, r.value)));
    }
    nodes.push(
      el("h3", {}, "Terms"),
      el("table", { class: "terms", id: "approval-terms" }, el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Term"), el("th", { scope: "col" }, "Value"))), tbody),
    );
  } else {
    nodes.push(el("p", { class: "muted", id: "approval-terms-none" }, "The Company gave no machine-readable terms, so Poppydesk could not check the summary against the request."));
  }
  const facts = el("dl", { class: "facts" });
  append(facts, [
    el("dt", {}, "Account"),
    el("dd", { id: "approval-account" }, item.account ? item.account : "signed out"),
    el("dt", {}, "Session"),
    el("dd", { id: "approval-session", class: "mono" }, item.sid || "unknown"),
    el("dt", {}, "Through"),
    el("dd", {}, item.interface === "mcp" ? "the Company’s MCP server" : item.interface === "api" ? "the Company’s API" : item.interface),
    el("dt", {}, "Operation"),
    el("dd", { class: "mono" }, `${item.current.operationId} · version ${item.current.revision}`),
  ]);
  nodes.push(el("h3", {}, "Who and where"), facts);
  const req = item.request;
  const reqText = req.tool
    ? `Tool ${req.tool}\n${req.arguments || "(no arguments)"}`
    : `${req.method} ${req.url}${req.body ? "\n" + req.body : ""}`;
  nodes.push(el("h3", {}, "What your agent requested"), el("pre", { class: "approval-request", id: "approval-request" }, reqText));
  return nodes;
}
