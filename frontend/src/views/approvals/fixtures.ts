// Test fixtures of the Approvals section: an approval item as fronts.Approvals sends it, a fake
// fronts.Approvals, and DOM helpers.

import type { ApprovalItem, ApprovalRow, DialogStep, Outcome } from "../../api";
import { FakeEvents } from "../../api/testing";
import type { ApprovalsBackend } from "./view";

export const T0 = Date.parse("2026-10-08T19:00:00Z");

export function item(over: Partial<ApprovalItem> = {}, rev = "1791487200-k3Jd9Qx2mW8v", expiresInMs = 10 * 60_000): ApprovalItem {
  return {
    id: "apr_1",
    company: "https://auth.shop.localhost:8443",
    companyName: "Poppy Outfitters",
    companyDomain: "shop.localhost:8443",
    account: "acct_demo",
    sid: "sid_abc",
    interface: "api",
    state: "pending",
    decidable: true,
    violation: "",
    current: {
      operationId: "exc_5Rt2",
      revision: rev,
      summary: { blocks: [{ kind: "paragraph", inlines: [{ text: "Exchange the Stormline Jacket (M) for $70.00 more." }] }], plain_text: "Exchange…" },
      summaryText: "Exchange the Stormline Jacket (M) for $70.00 more.",
      terms: [
        { path: "/order_id", value: '"ord_7Hk2"' },
        { path: "/price_difference/amount", value: '"70.00"' },
      ],
      expiresAt: new Date(T0 + expiresInMs).toISOString(),
      digest: "digest-" + rev,
    },
    warnings: [],
    request: { method: "POST", url: "https://shop.localhost:8443/api/orders/ord_7Hk2/exchanges", body: '{"item_id":"itm_4Qa"}', tool: "", arguments: "", requester: "", conversation: "" },
    created: new Date(T0).toISOString(),
    updated: new Date(T0).toISOString(),
    decided: "",
    ...over,
  };
}

// rowOf is the row fronts.Approvals lists for an item (fronts.approvalRowsOf).
export function rowOf(it: ApprovalItem): ApprovalRow {
  return {
    id: it.id,
    company: it.company,
    companyName: it.companyName,
    companyDomain: it.companyDomain,
    account: it.account,
    interface: it.interface,
    state: it.state,
    decidable: it.decidable,
    violation: it.violation,
    summaryText: it.current.summaryText,
    expiresAt: it.current.expiresAt,
    created: it.created,
    updated: it.updated,
    decided: it.decided,
  };
}

export class FakeApprovals extends FakeEvents implements ApprovalsBackend {
  items: ApprovalItem[] = [];
  approvals: [string, string, string][] = [];
  declines: [string, string][] = [];
  outcome: Outcome = { status: "done", approvalId: "apr_1", httpStatus: 201, body: '{"exchange":{"status":"confirmed"}}', text: "Exchange confirmed.", message: "Done: the Company performed it." };
  demo = false;
  status() {
    return Promise.resolve({ available: true, problem: "", demo: this.demo, demoCompany: "Poppy Outfitters" });
  }
  // earlierItems are the decided approvals fronts.Approvals.Earlier pages through (cursor: an index).
  earlierItems: ApprovalItem[] = [];
  earlierCalls: string[] = [];
  list() {
    return Promise.resolve(this.items.map(rowOf));
  }
  earlier(cursor: string, limit: number) {
    this.earlierCalls.push(`${cursor}/${limit}`);
    const from = cursor ? Number(cursor) : 0;
    const items = this.earlierItems.slice(from, from + limit).map(rowOf);
    const next = from + limit < this.earlierItems.length ? String(from + limit) : "";
    return Promise.resolve({ items, next });
  }
  get(id: string) {
    const it = this.items.find((i) => i.id === id) ?? this.earlierItems.find((i) => i.id === id);
    return it ? Promise.resolve(it) : Promise.reject("no such approval");
  }
  approve(id: string, revision: string, digest: string) {
    this.approvals.push([id, revision, digest]);
    return Promise.resolve(this.outcome);
  }
  decline(id: string, revision: string) {
    this.declines.push([id, revision]);
    return Promise.resolve();
  }
  checkOutcome() {
    return Promise.resolve(this.outcome);
  }
  startDemoExchange(kind: string) {
    return Promise.resolve("requested " + kind);
  }
  agentRuns = 0;
  runExampleAgent() {
    this.agentRuns++;
    return Promise.resolve();
  }
  exampleAgent() {
    return Promise.resolve({ running: false, lines: [] as string[], error: "" });
  }
  resets = 0;
  resetDemo() {
    this.resets++;
    return Promise.resolve();
  }
  shown: [string, DialogStep[]][] = [];
  dialogShown(id: string, steps: DialogStep[]) {
    this.shown.push([id, steps]);
    return Promise.resolve();
  }
}

export function key(target: Element, k: string, shift = false): KeyboardEvent {
  const ev = new KeyboardEvent("keydown", { key: k, shiftKey: shift, bubbles: true, cancelable: true });
  target.dispatchEvent(ev);
  return ev;
}

export const $ = (id: string) => document.getElementById(id) as HTMLElement;
export const approveBtn = () => $("approve-button") as HTMLButtonElement;


// press is a user's click on btn: the pointer press that begins it, then the click.
export function press(btn: Element): void {
  btn.dispatchEvent(new Event("pointerdown", { bubbles: true, cancelable: true }));
  (btn as HTMLElement).click();
}

// off says whether a decision button is shown as unavailable (aria-disabled: it stays focusable
// and keeps receiving the presses that restart the guard).
export const off = (btn: Element) => btn.getAttribute("aria-disabled") === "true";
