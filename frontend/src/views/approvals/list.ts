// The Approvals list: the items waiting for the user, those whose outcome is unknown (with
// "Check the outcome"), and earlier ones, each a row that opens the dialog.

import type { ApprovalItem } from "../../api";
import { el } from "../../dom";
import { formatTime, itemStateWords } from "./words";

export interface ListActions {
  open(id: string): void;
  // check opens the item and asks the Company for its outcome.
  check(id: string): void;
}

// approvalGroups builds the list's groups (nothing for an empty list).
export function approvalGroups(items: ApprovalItem[], act: ListActions): HTMLElement[] {
  const groups: [string, string, ApprovalItem[]][] = [
    ["waiting", "Waiting for you", items.filter((i) => i.decidable)],
    ["unknown", "Outcome unknown", items.filter((i) => i.state === "outcome_unknown")],
    ["earlier", "Earlier", items.filter((i) => !i.decidable && i.state !== "outcome_unknown")],
  ];
  const nodes: HTMLElement[] = [];
  for (const [key, title, list] of groups) {
    if (list.length === 0) continue;
    const ul = el("ul", { class: "approval-rows" });
    for (const it of list) {
      const open = el(
        "button",
        { type: "button", class: "approval-row", "data-id": it.id, id: `approval-row-${it.id}` },
        el("span", { class: "row-company" }, it.companyName || it.company),
        el("span", { class: "row-summary" }, it.current.summaryText),
        el("span", { class: "row-state" }, `${itemStateWords(it)} · ${formatTime(it.updated)}`),
      );
      open.addEventListener("click", () => act.open(it.id));
      const li = el("li", {}, open);
      if (it.state === "outcome_unknown" && !it.violation) {
        const check = el("button", { type: "button", class: "btn", "data-check": it.id }, "Check the outcome");
        check.addEventListener("click", () => act.check(it.id));
        li.appendChild(check);
      }
      ul.appendChild(li);
    }
    nodes.push(el("section", { class: `approval-group group-${key}`, "aria-label": title }, el("h2", { class: "group-title" }, title), ul));
  }
  return nodes;
}
