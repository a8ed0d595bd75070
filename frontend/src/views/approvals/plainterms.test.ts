import { describe, expect, it } from "vitest";
import { labelOf, labelOfPointer, moneyWords, plainTerms, valueWords } from "./plainterms";

describe("the terms in plain words", () => {
  it.each([
    ["replacement_sku", "Replacement SKU"],
    ["price_difference", "Price difference"],
    ["order_id", "Order ID"],
    ["orderId", "Order ID"],
    ["delivery-date", "Delivery date"],
    ["SKU", "SKU"],
    ["0", "1"],
    ["", "(no name)"],
    ["__", "__"],
  ])("labels the key %j as %j", (key, want) => {
    expect(labelOf(key)).toBe(want);
  });

  it("labels a nested pointer with its parents, unescaping RFC 6901", () => {
    expect(labelOfPointer("/shipping/city")).toBe("Shipping › City");
    expect(labelOfPointer("/items/0/sku")).toBe("Items › 1 › SKU");
    expect(labelOfPointer("/a~1b/c~0d")).toBe("A/b › C~d");
    expect(labelOfPointer("")).toBe("The terms");
  });

  it.each([
    ['"ord_7Hk2"', "ord_7Hk2"],
    ['""', "(empty)"],
    ["true", "Yes"],
    ["false", "No"],
    ["null", "none"],
    ["70.5", "70.5"],
    ["1e3", "1e3"],
    ["[]", "none"],
    ["{}", "none"],
    ['"⟦U+202E⟧x"', "⟦U+202E⟧x"],
    ["not json", "not json"],
  ])("shows the value %s as %j, never rounded or converted", (text, want) => {
    expect(valueWords(text)).toBe(want);
  });

  it("shows an amount with its currency, every digit as the Company wrote it", () => {
    expect(moneyWords("70.00", "USD", "en-US")).toBe("$70.00 USD");
    expect(moneyWords("1234.5", "EUR", "en-US")).toBe("€1,234.5 EUR");
    expect(moneyWords("70.005", "USD", "en-US")).toBe("$70.005 USD");
    expect(moneyWords("70", "JPY", "en-US")).toBe("¥70 JPY");
    expect(moneyWords("70.00", "USD", "en-GB")).toBe("US$70.00 USD");
    expect(moneyWords("70.00", "CHF", "en-US")).toBe("CHF\u00a070.00");
    expect(moneyWords("1e3", "USD", "en-US")).toBe("1e3 USD");
    expect(moneyWords("12345678901234567.5", "USD", "en-US")).toBe("12345678901234567.5 USD");
    expect(moneyWords("70.00", "XYZ", "en-US")).toMatch(/70\.00/);
  });

  it("makes one row of {amount, currency} and keeps the Company's rows behind it", () => {
    const rows = [
      { path: "/order_id", value: '"ord_7Hk2"' },
      { path: "/replacement_sku", value: '"stormline-insulated-m"' },
      { path: "/price_difference/amount", value: '"70.00"' },
      { path: "/price_difference/currency", value: '"USD"' },
    ];
    const got = plainTerms(rows, "en-US");
    expect(got.map((r) => [r.label, r.value])).toEqual([
      ["Order ID", "ord_7Hk2"],
      ["Replacement SKU", "stormline-insulated-m"],
      ["Price difference", "$70.00 USD"],
    ]);
    expect(got[2].raw).toEqual(rows.slice(2));
  });

  it("does not read other objects as money", () => {
    const rows = [
      { path: "/fee/amount", value: '"5"' },
      { path: "/fee/currency", value: '"usd"' },
      { path: "/refund/amount", value: '"3.00"' },
      { path: "/refund/currency", value: '"EUR"' },
      { path: "/refund/reason", value: '"late"' },
    ];
    expect(plainTerms(rows, "en-US").map((r) => `${r.label}: ${r.value}`)).toEqual([
      "Fee › Amount: 5",
      "Fee › Currency: usd",
      "Refund › Amount: 3.00",
      "Refund › Currency: EUR",
      "Refund › Reason: late",
    ]);
  });
});
