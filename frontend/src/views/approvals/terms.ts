// The body of the approval dialog: what the user reads before deciding, in plain words first.
// The Company's verified name and domain (from discovery, never from the operation), which agent
// asked, the money line (money.ts: amounts with their currency, charge or refund, payment method
// and names, as the terms carry them), the differences the engine found between the terms, the
// request and the model's intent (differences.ts), what changed since the previous revision, the
// summary (summary.ts), the terms as labelled rows (plainterms.ts), and the account. A decided
// item names its reference (the operation and the version of the terms). The identifiers, the
// Session, the interface, the terms as the Company sent them and the raw request sit behind
// "Details", one click away.

import type { ApprovalItem } from "../../api";
import { append, el } from "../../dom";
import { hasChanges, renderChanges } from "./changes";
import { differenceWords } from "./differences";
import { type MoneyLine, moneyLine, moneySentence } from "./money";
import { plainTerms } from "./plainterms";
import { renderSummary } from "./summary";
import { itemStateWords, recordWords } from "./words";

// requesterWords says which agent asked, in the agent's own words.
export function requesterWords(item: ApprovalItem): string {
  const who = item.request?.requester ?? "";
  if (who) return `Asked by ${who}`;
  if (item.interface === "conversation" || item.request?.conversation) return `Sent by ${item.companyName || "the Company"}’s agent in a conversation`;
  return "Asked by your agent (it gave no name)";
}

// interfaceWords names the way the request went to the Company.
export function interfaceWords(iface: string): string {
  switch (iface) {
    case "mcp":
      return "the Company’s MCP server";
    case "api":
      return "the Company’s API";
    case "conversation":
      return "a conversation with the Company’s agent";
    default:
      return iface;
  }
}

// referenceWords names what an approval was about: the Company's operation and the version of
// its terms ("exc_5Rt2, version 1791487200-k3Jd9Qx2mW8v").
export function referenceWords(item: ApprovalItem): string {
  return `${item.current.operationId}, version ${item.current.revision}`;
}

// descriptionWords is what a screen reader says after the dialog's title: the Company, its
// verified domain and the money line.
export function descriptionWords(item: ApprovalItem, money: MoneyLine): string {
  const name = item.companyName || item.company;
  const amounts = moneySentence(money);
  return `${name}, ${item.companyDomain}. ${amounts || "The terms name no amount."}`;
}

// moneyBox shows the money line (nothing when the terms carry nothing about money or names).
function moneyBox(m: MoneyLine): HTMLElement | null {
  if (m.amounts.length === 0 && !m.method && m.names.length === 0) return null;
  const box = el("section", { class: "approval-money", id: "approval-money", "aria-label": "Money and items" });
  for (const a of m.amounts) {
    const line = el(
      "p",
      { class: `money-amount${a.direction ? " money-" + a.direction : ""}`, "data-currency": a.currency },
      el("span", { class: "money-label" }, a.label),
      el("span", { class: "money-value" }, a.text),
    );
    box.appendChild(line);
  }
  const facts = el("dl", { class: "money-facts" });
  if (m.method) append(facts, [el("dt", {}, "Payment method"), el("dd", { id: "approval-payment-method" }, m.method)]);
  for (const n of m.names) append(facts, [el("dt", {}, n.label), el("dd", {}, n.value)]);
  if (facts.childElementCount > 0) box.appendChild(facts);
  return box;
}

// approvalContent builds the dialog body for item; replaced says it replaces an earlier
// revision on screen.
export function approvalContent(doc: Document, item: ApprovalItem, replaced: boolean): Node[] {
  const nodes: Node[] = [];
  const name = item.companyName || item.company;
  const money = moneyLine(item.current.terms ?? []);
  const who = el("p", { class: "approval-requester", id: "approval-requester" }, requesterWords(item));
  if (item.request?.requester) who.title = "The name and version the agent gives itself when it connects; Poppydesk does not verify them.";
  const head = el(
    "header",
    { class: "approval-head" },
    el("p", { class: "approval-kicker", id: "approval-kicker" }, item.decidable ? "Your approval is needed" : item.violation ? itemStateWords(item) : recordWords(item, new Date(), item.interface === "conversation" || !!item.request?.conversation)),
    item.decidable
      ? el("h2", { id: "approval-title" }, "Approve at ", el("span", { id: "approval-company" }, name), "?")
      : el("h2", { id: "approval-title" }, el("span", { id: "approval-company" }, name)),
  );
  if (!item.decidable) head.appendChild(el("p", { class: "approval-reference", id: "approval-reference" }, "Reference: ", el("span", { class: "mono" }, referenceWords(item))));
  nodes.push(
    head,
    el("p", { id: "approval-description", hidden: true }, descriptionWords(item, money)),
    el(
      "p",
      { class: "approval-domain" },
      el("span", { id: "approval-domain" }, item.companyDomain),
      " · name and domain verified by Poppydesk, not taken from the request",
    ),
    who,
  );
  const box = moneyBox(money);
  if (box) nodes.push(box);
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
    for (const w of warnings) {
      const li = el("li", {}, differenceWords(w));
      li.title = w.message;
      ul.appendChild(li);
    }
    for (const w of summaryWarnings) ul.appendChild(el("li", {}, w.message));
    nodes.push(
      el(
        "section",
        { class: "approval-warnings", id: "approval-warnings", role: "alert", "aria-labelledby": "warnings-title" },
        el("h3", { id: "warnings-title" }, item.decidable ? "Check these differences before you decide" : "The differences Poppydesk pointed out"),
        ul,
      ),
    );
  }
  if (hasChanges(item.changes)) nodes.push(renderChanges(item.changes));
  nodes.push(
    el("h3", {}, item.decidable ? `What ${name} will do` : `What ${name} was asked to do`),
    el("div", { id: "approval-summary" }, renderSummary(doc, item.current.summary)),
  );
  const rows = item.current.terms ?? [];
  if (rows.length > 0) {
    const tbody = el("tbody", {});
    for (const r of plainTerms(rows)) {
      const tr = el("tr", {}, el("th", { scope: "row" }, r.label), el("td", {}, r.value));
      tr.title = r.raw.map((x) => `${x.path} = ${x.value}`).join("\n");
      tbody.appendChild(tr);
    }
    nodes.push(
      el("h3", { id: "terms-title" }, "The terms in detail"),
      el("table", { class: "terms", id: "approval-terms", "aria-labelledby": "terms-title" }, tbody),
    );
  } else {
    nodes.push(
      el("p", { class: "muted", id: "approval-terms-none" }, "The Company gave no terms as data, so Poppydesk could not check the summary against your agent’s request."),
    );
  }
  const facts = el("dl", { class: "facts approval-facts" });
  append(facts, [el("dt", {}, "Account"), el("dd", { id: "approval-account" }, item.account ? item.account : "none: your agent is not signed in here")]);
  nodes.push(facts, approvalDetails(item));
  return nodes;
}

// approvalDetails is the "Details" disclosure: identifiers, Session, interface, the terms as the
// Company sent them, and the request exactly as it will be sent.
function approvalDetails(item: ApprovalItem): HTMLElement {
  const facts = el("dl", { class: "facts" });
  append(facts, [
    el("dt", {}, "Approval"),
    el("dd", { class: "mono", id: "approval-id" }, item.id),
    el("dt", {}, "Operation"),
    el("dd", { class: "mono", id: "approval-operation" }, item.current.operationId),
    el("dt", {}, "Version of the terms"),
    el("dd", { class: "mono", id: "approval-revision" }, item.current.revision),
    el("dt", {}, "Session"),
    el("dd", { id: "approval-session", class: "mono" }, item.sid || "unknown"),
    el("dt", {}, "Through"),
    el("dd", { id: "approval-interface" }, interfaceWords(item.request?.conversation ? "conversation" : item.interface)),
  ]);
  const parts: Node[] = [el("summary", { id: "approval-details-toggle" }, "Details"), facts];
  const rows = item.current.terms ?? [];
  if (rows.length > 0) {
    const tbody = el("tbody", {});
    for (const r of rows) tbody.appendChild(el("tr", {}, el("th", { scope: "row", class: "mono" }, r.path), el("td", { class: "mono" }, r.value)));
    parts.push(
      el("h4", {}, "The terms as the Company sent them"),
      el(
        "table",
        { class: "terms terms-raw", id: "approval-terms-raw" },
        el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "JSON Pointer"), el("th", { scope: "col" }, "Value (JSON)"))),
        tbody,
      ),
    );
  }
  const req = item.request;
  const reqText = req.tool ? `Tool ${req.tool}\n${req.arguments || "(no arguments)"}` : `${req.method} ${req.url}${req.body ? "\n" + req.body : ""}`;
  parts.push(el("h4", {}, "What your agent requested (sent exactly like this when you approve)"), el("pre", { class: "approval-request", id: "approval-request" }, reqText));
  return el("details", { class: "approval-details", id: "approval-details" }, ...parts);
}
