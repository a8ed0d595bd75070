import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApprovalDialog, approvalsView, formatRemaining, type ApprovalItem, type ApprovalsBackend, type Outcome } from "./approvals";
import type { ViewContext } from "../app";

const T0 = Date.parse("2026-10-08T19:00:00Z");

function item(over: Partial<ApprovalItem> = {}, rev = "1791487200-k3Jd9Qx2mW8v", expiresInMs = 10 * 60_000): ApprovalItem {
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
    request: { method: "POST", url: "https://shop.localhost:8443/api/orders/ord_7Hk2/exchanges", body: '{"item_id":"itm_4Qa"}', tool: "", arguments: "" },
    created: new Date(T0).toISOString(),
    updated: new Date(T0).toISOString(),
    ...over,
  };
}

class FakeApprovals implements ApprovalsBackend {
  items: ApprovalItem[] = [];
  approvals: [string, string, string][] = [];
  declines: [string, string][] = [];
  outcome: Outcome = { status: "done", approvalId: "apr_1", httpStatus: 201, body: '{"exchange":{"status":"confirmed"}}', text: "Exchange confirmed.", message: "Done: the Company performed it." };
  listeners = new Map<string, ((...d: unknown[]) => void)[]>();
  demo = false;
  status() {
    return Promise.resolve({ available: true, problem: "", demo: this.demo, demoCompany: "Poppy Outfitters" });
  }
  list() {
    return Promise.resolve(this.items);
  }
  get(id: string) {
    const it = this.items.find((i) => i.id === id);
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
  on(event: string, cb: (...d: unknown[]) => void) {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), cb]);
    return () => {};
  }
  emit(event: string, ...d: unknown[]) {
    for (const cb of this.listeners.get(event) ?? []) cb(...d);
  }
}

function key(target: Element, k: string, shift = false): KeyboardEvent {
  const ev = new KeyboardEvent("keydown", { key: k, shiftKey: shift, bubbles: true, cancelable: true });
  target.dispatchEvent(ev);
  return ev;
}

const $ = (id: string) => document.getElementById(id) as HTMLElement;
const approveBtn = () => $("approve-button") as HTMLButtonElement;

describe("the approval dialog", () => {
  let now: number;
  let backend: FakeApprovals;
  let dlg: ApprovalDialog;
  beforeEach(() => {
    vi.useFakeTimers();
    now = T0;
    document.body.innerHTML = '<div id="app"><button id="outside">outside</button></div>';
    backend = new FakeApprovals();
    backend.items = [item()];
    dlg = new ApprovalDialog(document, backend, { now: () => now, requireTrusted: false });
  });
  afterEach(() => {
    dlg.close();
    vi.useRealTimers();
  });
  const advance = (ms: number) => {
    now += ms;
    vi.advanceTimersByTime(ms);
  };

  it("shows the verified Company, summary, terms, account, Session and the request as text", () => {
    dlg.open(item());
    expect($("approval-company").textContent).toBe("Poppy Outfitters");
    expect($("approval-domain").textContent).toBe("shop.localhost:8443");
    expect($("approval-summary").textContent).toContain("Stormline Jacket (M)");
    const rows = Array.from($("approval-terms").querySelectorAll("tbody tr")).map((r) => r.textContent);
    expect(rows).toEqual(['/order_id"ord_7Hk2"', '/price_difference/amount"70.00"']);
    expect($("approval-account").textContent).toBe("acct_demo");
    expect($("approval-session").textContent).toBe("sid_abc");
    expect($("approval-request").textContent).toBe('POST https://shop.localhost:8443/api/orders/ord_7Hk2/exchanges\n{"item_id":"itm_4Qa"}');
    expect($("app").hasAttribute("inert")).toBe(true);
  });

  it("says signed out when there is no account, and shows a tool call", () => {
    dlg.open(item({ account: "", interface: "mcp", request: { method: "", url: "", body: "", tool: "exchange_item", arguments: '{"order_id":"ord_7Hk2"}' } }));
    expect($("approval-account").textContent).toBe("signed out");
    expect($("approval-request").textContent).toBe('Tool exchange_item\n{"order_id":"ord_7Hk2"}');
  });

  it("keeps Approve disabled for the guard time, with a visible reason, then enables it", async () => {
    dlg.open(item());
    expect(approveBtn().disabled).toBe(true);
    expect($("approval-guard").textContent).toMatch(/stray click/);
    approveBtn().click();
    await Promise.resolve();
    expect(backend.approvals).toEqual([]);
    advance(990);
    dlg.refreshButtons();
    expect(approveBtn().disabled).toBe(true);
    advance(20);
    expect(approveBtn().disabled).toBe(false);
    expect($("approval-guard").textContent).toBe("");
  });

  it("is not the default button, and Enter on it does not approve", () => {
    dlg.open(item());
    advance(1100);
    expect(approveBtn().getAttribute("type")).toBe("button");
    expect(document.activeElement).not.toBe(approveBtn());
    approveBtn().focus();
    const ev = key(approveBtn(), "Enter");
    expect(ev.defaultPrevented).toBe(true);
    expect(backend.approvals).toEqual([]);
    expect($("approval-guard").textContent).toMatch(/Enter does not approve/);
    // A browser (or a DevTools driver) may still synthesize the click while Enter is down.
    approveBtn().click();
    expect(backend.approvals).toEqual([]);
    approveBtn().dispatchEvent(new KeyboardEvent("keyup", { key: "Enter", bubbles: true }));
    approveBtn().click();
    expect(backend.approvals).toHaveLength(1);
  });

  it("approves the revision and digest on screen and shows the Company's words verbatim", async () => {
    backend.outcome = { ...backend.outcome, text: "<b>Exchange confirmed.</b>" };
    dlg.open(item());
    advance(1100);
    approveBtn().click();
    expect($("approval-progress").textContent).toMatch(/Sending your approval to Poppy Outfitters/);
    await vi.waitFor(() => expect($("result-text")).toBeTruthy());
    expect(backend.approvals).toEqual([["apr_1", "1791487200-k3Jd9Qx2mW8v", "digest-1791487200-k3Jd9Qx2mW8v"]]);
    expect($("result-text").textContent).toBe("<b>Exchange confirmed.</b>");
    expect($("result-text").querySelector("b")).toBeNull();
    expect($("result-body").textContent).toBe('{"exchange":{"status":"confirmed"}}');
    expect(approveBtn().hidden).toBe(true);
  });

  it("shows an error in plain words", async () => {
    backend.approve = () => Promise.reject("the revision expired");
    dlg.open(item());
    advance(1100);
    approveBtn().click();
    await vi.waitFor(() => expect($("result-error")).toBeTruthy());
    expect($("result-error").textContent).toBe("Approving failed: the revision expired");
  });

  it("counts down to the expiry and disables both buttons once expired", () => {
    dlg.open(item({}, "r1", 3_000));
    advance(1100);
    expect(approveBtn().disabled).toBe(false);
    expect($("approval-expiry").textContent).toMatch(/^Expires in 2 s/);
    advance(2000);
    expect($("approval-expiry").textContent).toMatch(/^Expired at/);
    expect(approveBtn().disabled).toBe(true);
    expect(($("decline-button") as HTMLButtonElement).disabled).toBe(true);
    approveBtn().click();
    expect(backend.approvals).toEqual([]);
  });

  it("replaces the content on a new revision, shows what changed, and restarts the guard", async () => {
    dlg.open(item());
    advance(1100);
    expect(approveBtn().disabled).toBe(false);
    const next = item(
      {
        changes: { summary_changed: true, summary: [{ op: "equal", text: "Exchange for " }, { op: "delete", text: "$70.00" }, { op: "insert", text: "$80.00" }], terms: [{ path: "/price_difference/amount", kind: "changed", old: "70.00", new: "80.00" }], expiry_changed: false },
      },
      "r2",
    );
    dlg.update(next);
    expect($("approval-new-revision")).toBeTruthy();
    expect($("approval-changes").querySelector("del")?.textContent).toBe("$70.00");
    expect($("approval-changes").querySelector("ins")?.textContent).toBe("$80.00");
    expect($("approval-changes").textContent).toContain('/price_difference/amount: "70.00" → "80.00"');
    expect(approveBtn().disabled).toBe(true);
    advance(1100);
    approveBtn().click();
    await vi.waitFor(() => expect(backend.approvals).toHaveLength(1));
    expect(backend.approvals[0]).toEqual(["apr_1", "r2", "digest-r2"]);
  });

  it("redraws when the request changed under the same revision, and approves only the request on screen", async () => {
    dlg.open(item());
    advance(1100);
    const same = item({
      warnings: [{ code: "request_changed", message: "Your agent sent a different request; the Company's terms stayed the same." }],
      request: { method: "POST", url: "https://shop.localhost:8443/api/orders/ord_7Hk2/exchanges", body: '{"item_id":"itm_9Zt"}', tool: "", arguments: "" },
    });
    same.current = { ...same.current, digest: "digest-request-B" };
    dlg.update(same);
    expect($("approval-request").textContent).toContain("itm_9Zt");
    expect($("approval-warnings").textContent).toContain("different request");
    expect(approveBtn().disabled).toBe(true);
    advance(1100);
    approveBtn().click();
    await vi.waitFor(() => expect(backend.approvals).toHaveLength(1));
    expect(backend.approvals[0]).toEqual(["apr_1", "1791487200-k3Jd9Qx2mW8v", "digest-request-B"]);
  });

  it("shows the difference warnings prominently", () => {
    dlg.open(item({ warnings: [{ code: "term_differs", message: "The terms say replacement_sku stormline-insulated-l but the request asked for stormline-insulated-m." }] }));
    const w = $("approval-warnings");
    expect(w.getAttribute("role")).toBe("alert");
    expect(w.textContent).toContain("stormline-insulated-l");
  });

  it("traps focus, and Escape closes without deciding", () => {
    dlg.open(item());
    advance(1100);
    const focusables = Array.from(document.querySelectorAll<HTMLElement>("#approval-dialog button:not([disabled]):not([hidden]), #approval-dialog [tabindex='0']"));
    const last = focusables[focusables.length - 1];
    last.focus();
    key(last, "Tab");
    expect(document.activeElement).toBe(focusables[0]);
    key(focusables[0], "Tab", true);
    expect(document.activeElement).toBe(last);
    key(document.activeElement!, "Escape");
    expect(document.getElementById("approval-dialog")).toBeNull();
    expect($("app").hasAttribute("inert")).toBe(false);
    expect(backend.approvals).toEqual([]);
    expect(backend.declines).toEqual([]);
  });

  it("declines the revision on screen", async () => {
    dlg.open(item());
    ($("decline-button") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(backend.declines).toHaveLength(1));
    expect(backend.declines[0]).toEqual(["apr_1", "1791487200-k3Jd9Qx2mW8v"]);
    await vi.waitFor(() => expect($("result-status").textContent).toMatch(/You declined/));
  });
});

describe("the Approvals section", () => {
  function ctx(): ViewContext & { badges: Record<string, number>; statuses: string[] } {
    const c = {
      doc: document,
      badges: {} as Record<string, number>,
      statuses: [] as string[],
      setStatus(t: string) {
        c.statuses.push(t);
      },
      setBadge(id: string, n: number) {
        c.badges[id] = n;
      },
      show() {},
      empty() {
        const s = document.createElement("section");
        s.id = "empty-state";
        const p = document.createElement("p");
        p.className = "empty-text";
        p.textContent = "Nothing is waiting for your approval";
        s.append(p);
        return s;
      },
    };
    return c;
  }
  beforeEach(() => {
    document.body.innerHTML = '<div id="app"><main id="host"></main></div>';
  });

  it("lists pending items with a badge, and opens the dialog when a new one arrives", async () => {
    const backend = new FakeApprovals();
    const view = approvalsView(backend, { requireTrusted: false });
    const c = ctx();
    const leave = view($("host"), c) as () => void;
    await vi.waitFor(() => expect($("empty-state")).toBeTruthy());
    backend.items = [item(), item({ id: "apr_2", state: "outcome_unknown", decidable: false })];
    backend.emit("approvals:changed", { kind: "created", id: "apr_1", state: "pending" });
    await vi.waitFor(() => expect($("approval-dialog")).toBeTruthy());
    expect(c.badges.approvals).toBe(1);
    expect($("approval-row-apr_1").textContent).toContain("Poppy Outfitters");
    expect(document.querySelector('[data-check="apr_2"]')?.textContent).toBe("Check the outcome");
    leave();
    expect(document.getElementById("approval-dialog")).toBeNull();
  });

  it("offers the demo buttons in demo mode", async () => {
    const backend = new FakeApprovals();
    backend.demo = true;
    approvalsView(backend)($("host"), ctx());
    await vi.waitFor(() => expect($("demo-api")).toBeTruthy());
    expect($("demo-mcp").textContent).toBe("Request the jacket exchange (MCP)");
    $("demo-api").click();
    await vi.waitFor(() => expect($("demo-note").textContent).toBe("requested api"));
  });

  it("runs the example agent and shows its words as the agent's", async () => {
    const backend = new FakeApprovals();
    backend.demo = true;
    approvalsView(backend)($("host"), ctx());
    await vi.waitFor(() => expect($("demo-agent")).toBeTruthy());
    expect($("demo-agent").textContent).toBe("Run the example agent");
    $("demo-agent").click();
    expect(backend.agentRuns).toBe(1);
    expect(($("demo-agent") as HTMLButtonElement).disabled).toBe(true);
    backend.emit("approvals:example-agent", { running: true, lines: ["→ discover_company: done — ok", "<b>not markup</b>"], error: "" });
    expect($("agent-lines").children.length).toBe(2);
    expect($("agent-lines").textContent).toContain("<b>not markup</b>");
    expect(document.querySelector("#agent-lines b")).toBeNull();
    expect($("agent-transcript").textContent).toContain("The example agent says:");
    // A re-render of the list keeps the transcript.
    backend.items = [item()];
    backend.emit("approvals:changed", { kind: "created", id: "apr_1", state: "pending" });
    await vi.waitFor(() => expect($("approval-dialog")).toBeTruthy());
    expect($("agent-lines").children.length).toBe(2);
    backend.emit("approvals:example-agent", { running: false, lines: ["a", "b", "Outcome: the exchange was performed after your approval."], error: "" });
    expect($("agent-state").textContent).toBe("The example agent has finished.");
    expect(($("demo-agent") as HTMLButtonElement).disabled).toBe(false);
    expect($("agent-lines").textContent).toContain("Outcome: the exchange was performed");
  });
});

describe("formatRemaining", () => {
  it.each([
    [0, "expired"],
    [1, "1 s"],
    [59_000, "59 s"],
    [61_000, "1 min 01 s"],
    [3_600_000, "1 h 0 min"],
    [5 * 86_400_000, "5 days"],
  ])("%d ms → %s", (ms, want) => expect(formatRemaining(ms)).toBe(want));
});
