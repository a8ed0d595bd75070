import { describe, expect, it } from "vitest";
import { directionOf, moneyLine, moneySentence } from "./money";

const amount = (key: string, a: string, c = "USD") => [
  { path: `/${key}/amount`, value: JSON.stringify(a) },
  { path: `/${key}/currency`, value: JSON.stringify(c) },
];

describe("the money line", () => {
  it.each([
    ["/charge", "charge"],
    ["/amount_charged", "charge"],
    ["/payment", "charge"],
    ["/refund", "refund"],
    ["/refund_amount", "refund"],
    ["/store_credit", "refund"],
    ["/price_difference", ""],
    ["/total", ""],
    ["/charge_or_refund", ""],
  ])("reads the direction of %s from its key only: %j", (path, want) => {
    expect(directionOf(path)).toBe(want);
  });

  it("shows a charge with its currency, the payment method and the names the terms carry", () => {
    const m = moneyLine(
      [
        { path: "/order_id", value: '"ord_7Hk2"' },
        { path: "/item_name", value: '"Stormline Jacket (M)"' },
        { path: "/replacement_name", value: '"Stormline Insulated Jacket (M)"' },
        ...amount("price_difference", "70.00"),
        ...amount("charge", "70.00"),
        { path: "/payment_method", value: '"the card used for the order"' },
      ],
      "en-US",
    );
    // The amount that says its direction; the signed difference stays in the terms table.
    expect(m.amounts).toEqual([{ label: "Charge", direction: "charge", text: "$70.00 USD", amount: "70.00", currency: "USD" }]);
    expect(m.method).toBe("the card used for the order");
    expect(m.names).toEqual([
      { label: "Item name", value: "Stormline Jacket (M)" },
      { label: "Replacement name", value: "Stormline Insulated Jacket (M)" },
    ]);
    expect(moneySentence(m)).toBe("Charge: $70.00 USD. Payment method: the card used for the order.");
  });

  it("claims no direction the terms do not state, and invents nothing", () => {
    const m = moneyLine([...amount("price_difference", "-117.00"), ...amount("fee", "5", "EUR")], "en-US");
    expect(m.amounts.map((a) => `${a.label}: ${a.text}`)).toEqual(["Price difference: -$117.00 USD", "Fee: €5 EUR"]);
    expect(m.method).toBe("");
    expect(m.names).toEqual([]);
    expect(moneyLine([{ path: "/order_id", value: '"ord_1"' }], "en-US")).toEqual({ amounts: [], method: "", names: [] });
  });

  it("shows a refund as a refund", () => {
    const m = moneyLine([...amount("refund", "117.00"), { path: "/card", value: '"Visa ending 4242"' }], "en-US");
    expect(moneySentence(m)).toBe("Refund: $117.00 USD. Payment method: Visa ending 4242.");
  });
});
