import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApprovalDialog } from "./dialog";
import { $, FakeApprovals, T0, approveBtn, item, key, off, press } from "./fixtures";

describe("the approval dialog", () => {
  let backend: FakeApprovals;
  let dlg: ApprovalDialog;
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(T0);
    document.body.innerHTML = '<a id="skip" href="#main">Skip</a><div id="app"><button id="outside">outside</button></div>';
    backend = new FakeApprovals();
    backend.items = [item()];
    // The dialog's clock is the fake timers' (Date.now), so it moves with every timer they run.
    dlg = new ApprovalDialog(document, backend, { requireTrusted: false });
  });
  afterEach(() => {
    dlg.close();
    vi.useRealTimers();
  });
  const advance = (ms: number) => {
    vi.advanceTimersByTime(ms);
  };

  it("shows the verified Company, summary, terms, account, Session and the request as text", () => {
    dlg.open(item());
    expect($("approval-company").textContent).toBe("Poppy Outfitters");
    expect($("approval-domain").textContent).toBe("shop.localhost:8443");
    expect($("approval-summary").textContent).toContain("Stormline Jacket (M)");
    // The terms in words; the Company's pointers and JSON values behind Details.
    const rows = Array.from($("approval-terms").querySelectorAll<HTMLTableRowElement>("tbody tr")).map((r) => `${r.cells[0].textContent} = ${r.cells[1].textContent}`);
    expect(rows).toEqual(["Order ID = ord_7Hk2", "Price difference › Amount = 70.00"]);
    const raw = Array.from($("approval-terms-raw").querySelectorAll("tbody tr")).map((r) => r.textContent);
    expect(raw).toEqual(['/order_id"ord_7Hk2"', '/price_difference/amount"70.00"']);
    expect($("approval-details").tagName).toBe("DETAILS");
    expect(($("approval-details") as HTMLDetailsElement).open).toBe(false);
    expect($("approval-details").contains($("approval-session"))).toBe(true);
    expect($("approval-details").contains($("approval-request"))).toBe(true);
    expect($("approval-requester").textContent).toBe("Asked by your agent (it gave no name)");
    expect($("approval-account").textContent).toBe("acct_demo");
    expect($("approval-session").textContent).toBe("sid_abc");
    expect($("approval-request").textContent).toBe('POST https://shop.localhost:8443/api/orders/ord_7Hk2/exchanges\n{"item_id":"itm_4Qa"}');
    expect($("app").hasAttribute("inert")).toBe(true);
  });

  it("says signed out when there is no account, and shows a tool call", () => {
    dlg.open(item({ account: "", interface: "mcp", request: { method: "", url: "", body: "", tool: "exchange_item", arguments: '{"order_id":"ord_7Hk2"}', requester: "", conversation: "" } }));
    expect($("approval-account").textContent).toBe("none: your agent is not signed in here");
    expect($("approval-request").textContent).toBe('Tool exchange_item\n{"order_id":"ord_7Hk2"}');
  });

  it("keeps Approve and Decline off until a second after the dialog was painted, with a visible reason", async () => {
    dlg.open(item());
    expect(off(approveBtn())).toBe(true);
    expect(off($("decline-button"))).toBe(true);
    // Never disabled: a press on them must reach the guard.
    expect(approveBtn().disabled).toBe(false);
    expect($("approval-guard").textContent).toMatch(/stray click/);
    advance(990);
    expect(off(approveBtn())).toBe(true);
    advance(100);
    expect(off(approveBtn())).toBe(false);
    expect(off($("decline-button"))).toBe(false);
    expect($("approval-guard").textContent).toBe("");
    press(approveBtn());
    await vi.waitFor(() => expect(backend.approvals).toHaveLength(1));
  });

  it("restarts the guard on every press or key that lands while it runs", () => {
    dlg.open(item());
    advance(600);
    key($("approval-body"), "a");
    advance(900);
    expect(off(approveBtn())).toBe(true);
    $("approval-body").dispatchEvent(new Event("pointerdown", { bubbles: true }));
    advance(900);
    expect(off(approveBtn())).toBe(true);
    advance(200);
    expect(off(approveBtn())).toBe(false);
  });

  it("never approves a burst of clicks that began at paint, however long it lasts", async () => {
    dlg.open(item());
    // Six clicks 100 ms apart from the paint, then one every 300 ms for two seconds.
    for (let i = 0; i < 6; i++) {
      press(approveBtn());
      advance(100);
    }
    for (let i = 0; i < 7; i++) {
      press(approveBtn());
      advance(300);
    }
    await Promise.resolve();
    expect(backend.approvals).toEqual([]);
    expect(backend.declines).toEqual([]);
    // A press that began during the guard does not approve when its click comes after it.
    approveBtn().dispatchEvent(new Event("pointerdown", { bubbles: true }));
    advance(1100);
    approveBtn().click();
    await Promise.resolve();
    expect(backend.approvals).toEqual([]);
    // A new press after a quiet second does.
    press(approveBtn());
    await vi.waitFor(() => expect(backend.approvals).toHaveLength(1));
  });

  it("restarts the guard when the user comes back from another application", () => {
    dlg.open(item());
    window.dispatchEvent(new Event("focus"));
    advance(1100);
    expect(off(approveBtn())).toBe(false);
    // A focus that is not a return changes nothing.
    window.dispatchEvent(new Event("focus"));
    expect(off(approveBtn())).toBe(false);
    window.dispatchEvent(new Event("blur"));
    advance(5000);
    expect(off(approveBtn())).toBe(false);
    window.dispatchEvent(new Event("focus"));
    expect(off(approveBtn())).toBe(true);
    advance(1100);
    expect(off(approveBtn())).toBe(false);
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
    // Space on the focused button approves (its press arms it; its release clicks).
    key(approveBtn(), " ");
    approveBtn().click();
    expect(backend.approvals).toHaveLength(1);
  });

  it("asks a second time, in plain words, before approving terms that differ from the request", async () => {
    dlg.open(
      item({
        warnings: [
          {
            code: "term_differs",
            term: "/replacement_sku",
            where: "body /replacement_sku",
            term_value: "stormline-insulated-l",
            request_value: "stormline-insulated-m",
            message: "The terms say replacement_sku is \"stormline-insulated-l\", but the request sent \"stormline-insulated-m\" in body /replacement_sku.",
          },
        ],
      }),
    );
    const plain = "Replacement SKU: the terms say stormline-insulated-l, but your agent’s request says stormline-insulated-m.";
    expect($("approval-warnings").textContent).toContain(plain);
    advance(1100);
    press(approveBtn());
    await Promise.resolve();
    expect(backend.approvals).toEqual([]);
    expect($("approval-confirm").hidden).toBe(false);
    expect($("approval-confirm").textContent).toContain("not what your agent asked for");
    expect($("approval-confirm").textContent).toContain(plain);
    expect(approveBtn().textContent).toBe("Approve these terms");
    // The second confirmation has its own guard.
    press(approveBtn());
    await Promise.resolve();
    expect(backend.approvals).toEqual([]);
    advance(1100);
    press(approveBtn());
    await vi.waitFor(() => expect(backend.approvals).toHaveLength(1));
  });

  it("approves the revision and digest on screen and shows the Company's words verbatim", async () => {
    backend.outcome = { ...backend.outcome, text: "<b>Exchange confirmed.</b>" };
    dlg.open(item());
    advance(1100);
    press(approveBtn());
    expect($("approval-progress").textContent).toMatch(/Sending your approval to Poppy Outfitters/);
    await vi.waitFor(() => expect($("result-text")).toBeTruthy());
    expect(backend.approvals).toEqual([["apr_1", "1791487200-k3Jd9Qx2mW8v", "digest-1791487200-k3Jd9Qx2mW8v"]]);
    expect($("result-text").textContent).toBe("<b>Exchange confirmed.</b>");
    expect($("result-text").querySelector("b")).toBeNull();
    expect($("result-body").textContent).toBe('{"exchange":{"status":"confirmed"}}');
    expect(approveBtn().hidden).toBe(true);
    // A sentence first; the Company's words marked as its own; the raw response behind Details.
    expect($("result-status").textContent).toBe("Poppy Outfitters performed what you approved.");
    expect($("result-text").closest("figure")?.querySelector("figcaption")?.textContent).toBe("What Poppy Outfitters said, in its own words:");
    expect($("result-body").closest("details")?.id).toBe("result-details");
  });

  it("says which agent asked, in the agent's own words", () => {
    dlg.open(item({ request: { method: "POST", url: "https://shop.localhost:8443/x", body: "", tool: "", arguments: "", requester: "Claude Code 2.1 via poppydesk mcp", conversation: "" } }));
    expect($("approval-requester").textContent).toBe("Asked by Claude Code 2.1 via poppydesk mcp");
    expect($("approval-requester").title).toMatch(/does not verify/);
  });

  it("says a revision from a conversation came from the Company's agent", () => {
    dlg.open(item({ request: { method: "", url: "", body: "", tool: "", arguments: "", requester: "", conversation: "conv_1" } }));
    expect($("approval-requester").textContent).toBe("Sent by Poppy Outfitters’s agent in a conversation");
  });

  it("reads a decided item as a record, never as a question", () => {
    const decided = "2026-12-01T08:47:00Z";
    dlg.open(item({ state: "succeeded", decidable: false, decided, updated: decided, result: backend.outcome }));
    expect($("approval-title").textContent).toBe("Poppy Outfitters");
    expect($("approval-title").textContent).not.toContain("?");
    expect($("approval-kicker").textContent).toMatch(/^Approved on .*1.* at .*47.* · performed$/);
    expect($("approval-expiry").textContent).toBe("");
    expect(approveBtn().hidden).toBe(true);
  });

  it("turns the open question into a record when the state changes after a decision", () => {
    dlg.open(item());
    expect($("approval-title").textContent).toBe("Approve at Poppy Outfitters?");
    dlg.update(item({ state: "declined", decidable: false, decided: new Date(T0).toISOString() }));
    expect($("approval-title").textContent).toBe("Poppy Outfitters");
    expect($("approval-kicker").textContent).toMatch(/^Declined on /);
  });

  it("shows an error in plain words", async () => {
    backend.approve = () => Promise.reject("the revision expired");
    dlg.open(item());
    advance(1100);
    press(approveBtn());
    await vi.waitFor(() => expect($("result-error")).toBeTruthy());
    expect($("result-error").textContent).toBe("Approving failed: the revision expired");
    // Escape closes it after an error too.
    key(document.activeElement ?? document.body, "Escape");
    expect(dlg.isOpen).toBe(false);
  });

  it("counts down to the expiry and disables both buttons once expired", () => {
    dlg.open(item({}, "r1", 3_000));
    advance(1100);
    expect(off(approveBtn())).toBe(false);
    expect($("approval-expiry").textContent).toMatch(/^Expires in 2 s/);
    advance(2000);
    expect($("approval-expiry").textContent).toMatch(/^Expired at/);
    expect(off(approveBtn())).toBe(true);
    expect(off($("decline-button"))).toBe(true);
    press(approveBtn());
    expect(backend.approvals).toEqual([]);
  });

  it("replaces the content on a new revision, shows what changed, and restarts the guard", async () => {
    dlg.open(item());
    advance(1100);
    expect(off(approveBtn())).toBe(false);
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
    expect($("approval-changes").textContent).toContain("Price difference › Amount: 70.00 → 80.00");
    expect(off(approveBtn())).toBe(true);
    advance(1100);
    press(approveBtn());
    await vi.waitFor(() => expect(backend.approvals).toHaveLength(1));
    expect(backend.approvals[0]).toEqual(["apr_1", "r2", "digest-r2"]);
  });

  it("redraws when the request changed under the same revision, and approves only the request on screen", async () => {
    dlg.open(item());
    advance(1100);
    const same = item({
      warnings: [{ code: "request_changed", message: "Your agent sent a different request; the Company's terms stayed the same." }],
      request: { method: "POST", url: "https://shop.localhost:8443/api/orders/ord_7Hk2/exchanges", body: '{"item_id":"itm_9Zt"}', tool: "", arguments: "", requester: "", conversation: "" },
    });
    same.current = { ...same.current, digest: "digest-request-B" };
    dlg.update(same);
    expect($("approval-request").textContent).toContain("itm_9Zt");
    expect($("approval-warnings").textContent).toContain("different request");
    expect(off(approveBtn())).toBe(true);
    advance(1100);
    press(approveBtn());
    await vi.waitFor(() => expect(backend.approvals).toHaveLength(1));
    expect(backend.approvals[0]).toEqual(["apr_1", "1791487200-k3Jd9Qx2mW8v", "digest-request-B"]);
  });

  it("shows the difference warnings prominently", () => {
    dlg.open(item({ warnings: [{ code: "term_differs", message: "The terms say replacement_sku stormline-insulated-l but the request asked for stormline-insulated-m." }] }));
    const w = $("approval-warnings");
    expect(w.getAttribute("role")).toBe("alert");
    expect(w.textContent).toContain("stormline-insulated-l");
  });

  it("traps focus, with everything behind it inert, and Escape closes without deciding", () => {
    $("outside").focus();
    dlg.open(item());
    advance(1100);
    expect($("skip").hasAttribute("inert")).toBe(true);
    expect($("app").hasAttribute("inert")).toBe(true);
    expect($("approval-dialog").getAttribute("role")).toBe("alertdialog");
    expect($("approval-dialog").getAttribute("aria-describedby")).toBe("approval-description");
    const focusables = Array.from(document.querySelectorAll<HTMLElement>("#approval-dialog button:not([disabled]):not([hidden]), #approval-dialog [tabindex='0']"));
    const last = focusables[focusables.length - 1];
    last.focus();
    key(last, "Tab");
    expect(document.activeElement).toBe(focusables[0]);
    key(focusables[0], "Tab", true);
    expect(document.activeElement).toBe(last);
    // Focus that lands outside (the skip link, clicked) is brought back.
    $("skip").focus();
    expect($("approval-dialog").contains(document.activeElement)).toBe(true);
    key(document.activeElement!, "Escape");
    expect(document.getElementById("approval-dialog")).toBeNull();
    expect($("app").hasAttribute("inert")).toBe(false);
    expect($("skip").hasAttribute("inert")).toBe(false);
    expect(document.activeElement).toBe($("outside"));
    expect(backend.approvals).toEqual([]);
    expect(backend.declines).toEqual([]);
  });

  it("declines the revision on screen, keeps the focus in the record, and Escape closes it", async () => {
    $("outside").focus();
    dlg.open(item());
    advance(1100);
    $("decline-button").focus();
    press($("decline-button"));
    await vi.waitFor(() => expect(backend.declines).toHaveLength(1));
    expect(backend.declines[0]).toEqual(["apr_1", "1791487200-k3Jd9Qx2mW8v"]);
    await vi.waitFor(() => expect($("result-status").textContent).toMatch(/You declined/));
    expect(document.activeElement).toBe($("close-button"));
    key(document.activeElement!, "Escape");
    expect(dlg.isOpen).toBe(false);
    expect(document.activeElement).toBe($("outside"));
  });

  it("describes itself by the Company and the money line, and a record names its reference", () => {
    dlg.open(
      item({
        current: {
          ...item().current,
          terms: [
            { path: "/charge/amount", value: '"70.00"' },
            { path: "/charge/currency", value: '"USD"' },
            { path: "/payment_method", value: '"the card used for the order"' },
            { path: "/item_name", value: '"Stormline Jacket (M)"' },
          ],
        },
      }),
    );
    const desc = $("approval-description").textContent ?? "";
    expect(desc).toContain("Poppy Outfitters, shop.localhost:8443.");
    expect(desc).toMatch(/Charge: .*70\.00.* USD\./);
    expect(desc).toContain("Payment method: the card used for the order.");
    expect($("approval-money").textContent).toContain("Stormline Jacket (M)");
    expect(document.getElementById("approval-reference")).toBeNull();
    dlg.update(item({ state: "succeeded", decidable: false, decided: new Date(T0).toISOString() }));
    expect($("approval-reference").textContent).toBe("Reference: exc_5Rt2, version 1791487200-k3Jd9Qx2mW8v");
  });
});
