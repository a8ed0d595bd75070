import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApprovalDialog } from "./dialog";
import { approvalGroups } from "./list";
import { $, FakeApprovals, T0, approveBtn, item, press, rowOf } from "./fixtures";

// An item whose terms the Company changed without a new revision (Operations 3): the words come
// from Go (approvals.Item.Violation); the dialog shows them first, says the Company broke the
// rules, offers no Approve, and never reads as a refusal or as the agent's doing.
const words =
  "The Company changed the terms without giving them a new version: it sent other terms under version r1, which it had already used for the terms shown before. This is the Company's error.";

function violated() {
  return item({
    state: "failed",
    decidable: false,
    violation: words,
    warnings: [
      { code: "revision_reused", message: words },
      { code: "term_differs", message: "The terms name another size than the summary." },
    ],
  });
}

describe("an approval whose revision the Company reused", () => {
  let backend: FakeApprovals;
  let dlg: ApprovalDialog;
  beforeEach(() => {
    vi.useFakeTimers();
    document.body.innerHTML = '<div id="app"></div>';
    backend = new FakeApprovals();
    dlg = new ApprovalDialog(document, backend, { now: () => T0, requireTrusted: false, guardMs: 0 });
  });
  afterEach(() => {
    dlg.close();
    vi.useRealTimers();
  });

  it("says the Company changed the terms without a new revision, before anything else, and offers no Approve", async () => {
    dlg.open(violated());
    vi.advanceTimersByTime(20);
    const v = $("approval-violation");
    expect(v.getAttribute("role")).toBe("alert");
    expect($("violation-title").textContent).toBe("The Company broke the approval rules");
    expect($("approval-violation-text").textContent).toBe(words);
    // It comes before the Company's own summary.
    expect(v.compareDocumentPosition($("approval-summary")) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    // Shown once: not repeated among the differences to check, which stay.
    const warnings = Array.from($("approval-warnings").querySelectorAll("li")).map((l) => l.textContent);
    expect(warnings).toEqual(["The terms name another size than the summary."]);
    expect(approveBtn().hidden).toBe(true);
    press(approveBtn());
    await Promise.resolve();
    expect(backend.approvals).toEqual([]);
    const text = document.getElementById("approval-dialog")!.textContent!;
    expect(text).toContain("the Company broke the approval rules, so this can’t be approved");
    expect(text).not.toMatch(/the Company refused/);
    expect(text).not.toMatch(/repeated the call|request changed|the model/i); // nothing blames the agent
  });

  it("after the approval went out: outcome unknown, and no Check the outcome (nothing more is sent)", () => {
    const it0 = { ...violated(), state: "outcome_unknown" };
    dlg.open(it0);
    expect(($("check-outcome-button") as HTMLButtonElement).hidden).toBe(true);
    expect(document.getElementById("approval-dialog")!.textContent).toContain("Outcome unknown: the Company broke the approval rules");
    const [group] = approvalGroups([rowOf(it0)], { open: () => {}, check: () => {} });
    expect(group.querySelector("[data-check]")).toBeNull();
  });

  it("is listed with the same words, not as a refusal", () => {
    const [group] = approvalGroups([rowOf(violated())], { open: () => {}, check: () => {} });
    expect(group.textContent).toContain("Not done: the Company broke the approval rules");
    expect(group.textContent).not.toContain("the Company refused");
  });
});
