import { describe, expect, it } from "vitest";
import { companyMessage, outcomeNodes, outcomeSentence } from "./outcome";

const out = (over: Record<string, unknown> = {}) => ({ status: "done", approvalId: "apr_1", httpStatus: 0, body: "", text: "", message: "", ...over });

describe("the outcome of a decision", () => {
  it.each([
    ["done", "Shop performed what you approved."],
    ["failed", "Shop refused it, so nothing was done."],
    ["outcome_unknown", "The outcome is unknown: Shop gave no clear answer. Poppydesk will check with Shop before anything is asked again."],
    ["in_progress", "Shop is still working on it. Poppydesk checks again by itself."],
    ["declined", "You declined. Nothing was sent to Shop."],
    ["expired", "The terms expired before your approval could be sent, so nothing was done."],
  ])("says %s in a sentence", (status, want) => {
    expect(outcomeSentence(out({ status }), "Shop")).toBe(want);
  });

  it("says an approval in a conversation was accepted there, not that it was performed", () => {
    expect(outcomeSentence(out(), "Shop", true)).toBe("Shop accepted your approval in the conversation; its agent says there how it went.");
  });

  it("quotes the Company's text, else its top-level message or error_description, else nothing", () => {
    expect(companyMessage(out({ text: "Done.", body: '{"message":"other"}' }))).toBe("Done.");
    expect(companyMessage(out({ body: '{"exchange":{"status":"confirmed"},"message":"Exchange confirmed."}' }))).toBe("Exchange confirmed.");
    expect(companyMessage(out({ body: '{"error":"invalid_request","error_description":"Out of stock."}' }))).toBe("Out of stock.");
    expect(companyMessage(out({ body: '{"exchange":{"message":"nested"}}' }))).toBe("");
    expect(companyMessage(out({ body: "<html>" }))).toBe("");
  });

  it("puts the raw response behind Details, as text", () => {
    document.body.replaceChildren(...outcomeNodes(out({ status: "failed", httpStatus: 409, body: '{"error_description":"<img src=x>"}' }), "Shop"));
    expect(document.getElementById("result-status")?.textContent).toBe("Shop refused it, so nothing was done.");
    expect(document.getElementById("result-text")?.textContent).toBe("<img src=x>");
    expect(document.querySelector("img")).toBeNull();
    const d = document.getElementById("result-details") as HTMLDetailsElement;
    expect(d.open).toBe(false);
    expect(d.textContent).toContain("(HTTP status 409)");
  });
});
