import { beforeEach, describe, expect, it, vi } from "vitest";
import type { ViewContext } from "../../app";
import { $, FakeApprovals, T0, item, off, press } from "./fixtures";
import { approvalsView } from "./view";

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

  it("clears what went wrong before a Reset demo", async () => {
    const backend = new FakeApprovals();
    backend.demo = true;
    backend.startDemoExchange = () => Promise.reject("item itm_4Qa was already exchanged");
    approvalsView(backend)($("host"), ctx());
    await vi.waitFor(() => expect($("demo-api")).toBeTruthy());
    $("demo-api").click();
    await vi.waitFor(() => expect($("demo-note").textContent).toMatch(/The demo request failed: .*already exchanged/));
    backend.emit("approvals:example-agent", { running: false, lines: ["→ call_api_operation: failed"], error: "The example agent stopped: already exchanged" });
    expect($("agent-error").textContent).toMatch(/already exchanged/);
    $("demo-reset").click();
    await vi.waitFor(() => expect($("demo-reset-note").textContent).toMatch(/as it was at start/));
    expect($("demo-note").textContent).toBe("");
    expect(document.getElementById("agent-error")).toBeNull();
  });

  it("opens a new approval in place of a decided record, never over a question", async () => {
    const backend = new FakeApprovals();
    approvalsView(backend, { requireTrusted: false })($("host"), ctx());
    backend.items = [item({ state: "declined", decidable: false, decided: new Date(T0).toISOString() })];
    backend.emit("approvals:changed", { kind: "created", id: "apr_1", state: "declined" });
    await vi.waitFor(() => expect($("approval-title").textContent).toBe("Poppy Outfitters"));
    backend.items.push(item({ id: "apr_2" }), item({ id: "apr_3" }));
    backend.emit("approvals:changed", { kind: "created", id: "apr_2", state: "pending" });
    await vi.waitFor(() => expect($("approval-dialog").dataset.approval).toBe("apr_2"));
    backend.emit("approvals:changed", { kind: "created", id: "apr_3", state: "pending" });
    await new Promise((r) => setTimeout(r, 50));
    expect($("approval-dialog").dataset.approval).toBe("apr_2");
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

  it("turns the dialog into the record after a decision, even when the state changes came while it was sent", async () => {
    const backend = new FakeApprovals();
    const view = approvalsView(backend, { requireTrusted: false, guardMs: 0, now: () => T0 });
    view($("host"), ctx());
    backend.items = [item()];
    backend.emit("approvals:changed", { kind: "created", id: "apr_1", state: "pending" });
    await vi.waitFor(() => expect($("approval-dialog")).toBeTruthy());
    const approve = backend.approve.bind(backend);
    backend.approve = (id: string, revision: string, digest: string) => {
      // The queue changes the state (and tells the window) before the outcome returns.
      backend.items = [item({ state: "succeeded", decidable: false, decided: new Date().toISOString() })];
      backend.emit("approvals:changed", { kind: "state", id: "apr_1", state: "succeeded" });
      return approve(id, revision, digest);
    };
    await vi.waitFor(() => expect(off($("approve-button"))).toBe(false));
    press($("approve-button"));
    await vi.waitFor(() => expect($("approval-kicker").textContent).toMatch(/^Approved on .* · performed$/));
    expect($("approval-title").textContent).not.toContain("?");
  });
});
