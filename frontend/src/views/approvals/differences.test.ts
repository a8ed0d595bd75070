import { describe, expect, it } from "vitest";
import { differenceWords, differsFromRequest } from "./differences";

describe("the differences in plain words", () => {
  it.each([
    [
      { code: "term_differs", term: "/replacement_sku", where: "body /replacement_sku", term_value: "stormline-insulated-l", request_value: "stormline-insulated-m", message: "m" },
      "Replacement SKU: the terms say stormline-insulated-l, but your agent’s request says stormline-insulated-m.",
    ],
    [
      { code: "intent_differs", term: "/price_difference", where: "intent price_difference", term_value: { amount: "80.00", currency: "USD" }, request_value: "70.00", message: "m" },
      "Price difference: the terms say $80.00 USD, but your agent said it wanted 70.00.",
    ],
    [{ code: "intent_not_in_terms", where: "intent delivery_date", message: "m" }, "Your agent said what it wanted for “Delivery date”, but the terms say nothing about it."],
    [
      { code: "amount_not_in_summary", term: "/charge/amount", term_value: { amount: "70.00", currency: "USD" }, message: "m" },
      "Charge: the terms say $70.00 USD, but the Company’s description does not mention that amount.",
    ],
    [{ code: "request_changed", message: "Your agent sent a different request." }, "Your agent sent a different request."],
    [{ code: "term_differs", message: "The engine's sentence, when the fields are missing." }, "The engine's sentence, when the fields are missing."],
  ])("says %j in plain words", (w, want) => {
    expect(differenceWords(w, "en-US")).toBe(want);
  });

  it("asks a second time only about differences from what the agent asked", () => {
    expect(["term_differs", "intent_differs", "intent_not_in_terms", "amount_not_in_summary", "terms_absent", "request_changed"].filter((code) => differsFromRequest({ code, message: "" }))).toEqual([
      "term_differs",
      "intent_differs",
      "intent_not_in_terms",
      "amount_not_in_summary",
    ]);
  });
});
