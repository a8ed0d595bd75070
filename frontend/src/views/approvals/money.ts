// The money line at the top of the approval dialog: what the terms say about money, read as a
// bank's confirmation reads. Only what the Company's terms carry is shown, never anything
// guessed (Operations 3: the keys of `terms` are the Company's own):
//
//   - every amount ({amount, currency}, plainterms.ts) with its currency's symbol in the user's
//     locale and its ISO 4217 code ("$70.00 USD");
//   - whether it is charged or refunded when the term's key says so: a key with the word charge,
//     charged, debit, pay or payment is a charge, one with refund, refunded or credit a refund
//     ("charge" → "Charge", "refund_amount" → "Refund"). An amount whose key says neither
//     ("price_difference") keeps the Company's label and claims no direction;
//   - the payment method when a string term's key names one (a key with the word method or
//     card: "payment_method");
//   - the names of what the operation is about: string terms whose key ends with the word name
//     ("item_name", "replacement_name").
//
// When some amounts say their direction, the line shows those; otherwise it shows every amount.

import type { TermRow } from "../../api";
import { labelOf, plainTerms, segments } from "./plainterms";

export type Direction = "charge" | "refund" | "";

export interface MoneyAmount {
  // label is the Company's key in words, or "Charge" / "Refund" when it says its direction.
  label: string;
  direction: Direction;
  // text is the amount with its currency ("$70.00 USD").
  text: string;
  amount: string;
  currency: string;
}

export interface MoneyLine {
  amounts: MoneyAmount[];
  // method is the payment method as the Company wrote it ("" when the terms name none).
  method: string;
  // names are the names the terms carry, labelled by their keys ("Item name": "Stormline…").
  names: { label: string; value: string }[];
}

const CHARGE = new Set(["charge", "charged", "debit", "pay", "payment"]);
const REFUND = new Set(["refund", "refunded", "credit"]);

// words are the lower-case words of a key (labelOf's split).
function words(key: string): string[] {
  return labelOf(key).toLowerCase().split(" ");
}

// directionOf reads a direction from the words of an amount's own key.
export function directionOf(pointer: string): Direction {
  const key = segments(pointer).pop() ?? "";
  const w = words(key);
  const charge = w.some((x) => CHARGE.has(x));
  const refund = w.some((x) => REFUND.has(x));
  if (charge === refund) return ""; // neither, or a key that says both
  return charge ? "charge" : "refund";
}

// moneyLine reads the money line from the terms' rows.
export function moneyLine(rows: readonly TermRow[], locale?: string): MoneyLine {
  const out: MoneyLine = { amounts: [], method: "", names: [] };
  const all: MoneyAmount[] = [];
  for (const r of plainTerms(rows, locale)) {
    if (r.money) {
      const direction = directionOf(r.path);
      const label = direction === "charge" ? "Charge" : direction === "refund" ? "Refund" : r.label;
      all.push({ label, direction, text: r.value, amount: r.money.amount, currency: r.money.currency });
      continue;
    }
    if (r.text === undefined || r.text === "") continue;
    const w = words(segments(r.path).pop() ?? "");
    if (!out.method && (w.includes("method") || w.includes("card"))) out.method = r.text;
    else if (w[w.length - 1] === "name") out.names.push({ label: r.label, value: r.text });
  }
  const directed = all.filter((a) => a.direction !== "");
  out.amounts = directed.length > 0 ? directed : all;
  return out;
}

// moneySentence is the money line in one sentence for a screen reader ("Charge: $70.00 USD.
// Payment method: the card used for the order."); "" when the terms carry nothing about money.
export function moneySentence(m: MoneyLine): string {
  const parts = m.amounts.map((a) => `${a.label}: ${a.text}.`);
  if (m.method) parts.push(`Payment method: ${m.method}.`);
  return parts.join(" ");
}
