// The Approvals list: the items waiting for the user, those whose outcome is unknown (with
// "Check the outcome"), and earlier ones, each a row that opens the dialog. The earlier ones can
// be thousands: they are a virtualized list (only the rows in and near view are in the DOM,
// conversations/virtual-list.ts) that reads the next page from Go when scrolled near its end.

import type { ApprovalPage, ApprovalRow } from "../../api";
import { el } from "../../dom";
import { VirtualList, type VirtualOptions } from "../conversations/virtual-list";
import { formatTime, itemStateWords } from "./words";

export interface ListActions {
  open(id: string): void;
  // check opens the item and asks the Company for its outcome.
  check(id: string): void;
  // more reads the page of earlier rows after cursor (fronts.Approvals.Earlier); next is the cursor
  // after the earlier rows given ("" when they are all).
  more?: (cursor: string) => Promise<ApprovalPage>;
  next?: string;
  virtual?: VirtualOptions;
}

interface EarlierRow {
  key: string;
  item: ApprovalRow;
}

// rowButton is one item's row: the button that opens it, and "Check the outcome" when unknown.
function rowButton(it: ApprovalRow, act: ListActions, tag: "li" | "div"): HTMLElement {
  const open = el(
    "button",
    { type: "button", class: "approval-row", "data-id": it.id, id: `approval-row-${it.id}` },
    el("span", { class: "row-company" }, it.companyName || it.company),
    el("span", { class: "row-summary" }, it.summaryText),
    el("span", { class: "row-state" }, `${itemStateWords(it)} · ${formatTime(it.updated)}`),
  );
  open.addEventListener("click", () => act.open(it.id));
  const row = el(tag, { class: "approval-row-item" }, open);
  if (it.state === "outcome_unknown" && !it.violation) {
    const check = el("button", { type: "button", class: "btn", "data-check": it.id }, "Check the outcome");
    check.addEventListener("click", () => act.check(it.id));
    row.appendChild(check);
  }
  return row;
}

// earlierList is the virtualized group of earlier items, paging in more as it is scrolled.
function earlierList(items: ApprovalRow[], act: ListActions): HTMLElement {
  const scroller = el("div", { class: "approval-earlier", tabindex: "0", "aria-label": "Earlier approvals" });
  const vlist = new VirtualList<EarlierRow>(scroller, (r) => rowButton(r.item, act, "div"), { estimate: 86, ...act.virtual });
  const seen = new Set<string>();
  const rows: EarlierRow[] = [];
  const add = (list: ApprovalRow[]) => {
    for (const it of list) {
      if (seen.has(it.id)) continue;
      seen.add(it.id);
      rows.push({ key: it.id, item: it });
    }
    scroller.dataset.rows = String(rows.length);
  };
  add(items);
  vlist.setRows(rows, false);
  let next = act.next ?? "";
  let loading = false;
  const more = async () => {
    if (loading || !next || !act.more) return;
    const h = scroller.clientHeight || 600;
    if (scroller.scrollTop + h < scroller.scrollHeight - 4 * h && rows.length > 0 && scroller.scrollHeight > 0) return;
    loading = true;
    try {
      const page = await act.more(next);
      next = page.next;
      add(page.items ?? []);
      vlist.setRows(rows, false);
    } catch (err) {
      console.error("reading more approvals failed", err);
      next = "";
    } finally {
      loading = false;
    }
  };
  scroller.addEventListener("scroll", () => void more(), { passive: true });
  return scroller;
}

// approvalGroups builds the list's groups (nothing for an empty list).
export function approvalGroups(items: ApprovalRow[], act: ListActions): HTMLElement[] {
  const groups: [string, string, ApprovalRow[]][] = [
    ["waiting", "Waiting for you", items.filter((i) => i.decidable)],
    ["unknown", "Outcome unknown", items.filter((i) => i.state === "outcome_unknown")],
    ["earlier", "Earlier", items.filter((i) => !i.decidable && i.state !== "outcome_unknown")],
  ];
  const nodes: HTMLElement[] = [];
  for (const [key, title, list] of groups) {
    if (list.length === 0) continue;
    let body: HTMLElement;
    if (key === "earlier") {
      body = earlierList(list, act);
    } else {
      body = el("ul", { class: "approval-rows" });
      for (const it of list) body.appendChild(rowButton(it, act, "li"));
    }
    nodes.push(el("section", { class: `approval-group group-${key}`, "aria-label": title }, el("h2", { class: "group-title" }, title), body));
  }
  return nodes;
}
