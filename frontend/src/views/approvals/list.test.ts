import { beforeEach, describe, expect, it, vi } from "vitest";
import type { ViewContext } from "../../app";
import { $, FakeApprovals, item } from "./fixtures";
import { approvalsView } from "./view";

const ctx = (): ViewContext =>
  ({
    doc: document,
    setStatus() {},
    setBadge() {},
    show() {},
    empty() {
      const s = document.createElement("section");
      s.id = "empty-state";
      return s;
    },
  }) as unknown as ViewContext;

describe("the Approvals list with a long history", () => {
  beforeEach(() => {
    document.body.innerHTML = '<div id="app"><main id="host"></main></div>';
  });

  it("keeps the DOM small for 10,000 decided approvals and reads the next page when scrolled", async () => {
    const backend = new FakeApprovals();
    backend.items = [item()];
    backend.earlierItems = Array.from({ length: 10000 }, (_, i) =>
      item({ id: `apr_d${i}`, state: "succeeded", decidable: false, current: { ...item().current, summaryText: `decided ${i}` } }),
    );
    approvalsView(backend, { requireTrusted: false })($("host"), ctx());
    expect($("approvals-list").getAttribute("aria-busy")).toBe("true");
    await vi.waitFor(() => expect($("approval-row-apr_1")).toBeTruthy());
    expect($("approvals-list").hasAttribute("aria-busy")).toBe(false);
    const scroller = document.querySelector(".group-earlier .approval-earlier") as HTMLElement;
    expect(scroller.dataset.rows).toBe("25");
    expect(backend.earlierCalls).toEqual(["/25"]);
    const rendered = () => scroller.querySelectorAll(".approval-row").length;
    expect(rendered()).toBeGreaterThan(0);
    expect(rendered()).toBeLessThan(40);
    expect($("approval-row-apr_d0").textContent).toContain("decided 0");
    scroller.scrollTop = 25 * 56;
    scroller.dispatchEvent(new Event("scroll"));
    await vi.waitFor(() => expect(scroller.dataset.rows).toBe("75"));
    expect(backend.earlierCalls).toEqual(["/25", "25/50"]);
    expect(rendered()).toBeLessThan(40);
  });
});
