// The terms in plain words (Operations 3: `terms` is a JSON object whose keys the Company
// defines). Each row is a label made from the Company's key and the value as it reads:
//
//   - a key's words are split at "_", "-", "." and lower-to-upper case changes, the first word
//     capitalized, and a fixed list of abbreviations written in capitals ("replacement_sku" →
//     "Replacement SKU", "orderId" → "Order ID"); a nested key follows its parent ("Shipping ›
//     City"), an array element its position ("Items › 1");
//   - a string is shown without quotes, a number as written, true and false as Yes and No, null
//     as "none";
//   - an object of exactly {amount, currency}, where currency is three capital letters (an ISO
//     4217 code) and amount a decimal number, is one row: the amount with the currency's symbol
//     in the user's locale and its code ("$70.00 USD"), keeping every digit the Company wrote;
//     an amount the locale cannot write with exactly those digits reads "70.005 USD".
//
// Nothing else is interpreted: no key is renamed by meaning, no value is rounded or converted.
// The Company's own pointer and JSON value of every row stay one click away (the dialog's
// Details), and in each row's title.

import type { TermRow } from "../../api";

export interface PlainTerm {
  label: string;
  value: string;
  // raw lists the rows (JSON Pointer and JSON text) this plain row stands for.
  raw: TermRow[];
  // path is the JSON Pointer of the term (of the object, for an amount).
  path: string;
  // money is the amount and its currency code when the row is an amount.
  money?: { amount: string; currency: string };
  // text is the value when the term is a JSON string (undefined for any other value).
  text?: string;
}

const ABBREVIATIONS = new Set(["id", "ids", "sku", "url", "uri", "api", "vat", "iban", "bic", "eta", "utc", "pin", "uuid", "iso", "pdf", "sms", "ip", "usd", "eur", "gbp"]);

// labelOf turns one key of the Company's into words.
export function labelOf(key: string): string {
  if (/^\d+$/.test(key)) return String(Number(key) + 1);
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[\s_.\-]+/)
    .filter((w) => w !== "");
  if (words.length === 0) return key === "" ? "(no name)" : key;
  return words
    .map((w, i) => {
      const lower = w.toLowerCase();
      if (ABBREVIATIONS.has(lower)) return lower.toUpperCase();
      if (w !== lower && w === w.toUpperCase()) return w; // already capitals: "SKU", "EU"
      return i === 0 ? lower.charAt(0).toUpperCase() + lower.slice(1) : lower;
    })
    .join(" ");
}

// segments splits an RFC 6901 JSON Pointer.
export function segments(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

// labelOfPointer is the label of a pointer: its keys' words joined with " › ".
export function labelOfPointer(pointer: string): string {
  const segs = segments(pointer);
  if (segs.length === 0) return "The terms";
  return segs.map(labelOf).join(" › ");
}

function parse(text: string): { ok: boolean; v: unknown } {
  try {
    return { ok: true, v: JSON.parse(text) };
  } catch {
    return { ok: false, v: undefined };
  }
}

// valueWords shows one JSON value (as JSON text) in words.
export function valueWords(text: string): string {
  const { ok, v } = parse(text);
  if (!ok) return text;
  if (typeof v === "string") return v === "" ? "(empty)" : v;
  if (typeof v === "boolean") return v ? "Yes" : "No";
  if (v === null) return "none";
  if (typeof v === "number") return text.trim();
  if (Array.isArray(v) && v.length === 0) return "none";
  if (typeof v === "object" && v !== null && Object.keys(v).length === 0) return "none";
  return text;
}

const DECIMAL = /^-?\d{1,15}(\.\d{1,6})?$/;

// moneyWords shows an amount with its ISO 4217 currency, every digit kept: the currency's symbol
// in the user's locale and its code ("$70.00 USD", "70,00 € EUR"; the code once when the locale
// writes the code itself, "CHF 70.00") when the locale can write the amount with exactly the
// digits given, else "70.00 USD".
export function moneyWords(amount: string, currency: string, locale: string | undefined = userLocale()): string {
  const plain = `${amount} ${currency}`;
  if (!DECIMAL.test(amount)) return plain;
  const digits = amount.includes(".") ? amount.split(".")[1].length : 0;
  try {
    const f = new Intl.NumberFormat(locale, { style: "currency", currency, minimumFractionDigits: digits, maximumFractionDigits: digits });
    const out = f.format(Number(amount));
    // The formatted digits must be the Company's digits, in order (grouping aside).
    const want = amount.replace(/^-/, "").replace(".", "").replace(/^0+(?=\d)/, "");
    const got = out.replace(/[^\d]/g, "").replace(/^0+(?=\d)/, "");
    if (got !== want) return plain;
    return out.includes(currency) ? out : `${out} ${currency}`;
  } catch {
    return plain;
  }
}

// userLocale is the user's locale for numbers, without the POSIX variant a "C" or "POSIX"
// environment gives (en-US-u-va-posix writes "$ 70.00" where en-US writes "$70.00").
export function userLocale(): string | undefined {
  try {
    return new Intl.NumberFormat().resolvedOptions().locale.replace(/-u-va-posix$/i, "");
  } catch {
    return undefined;
  }
}

function moneyOf(rows: TermRow[]): { amount: string; currency: string } | null {
  if (rows.length !== 2) return null;
  const by = new Map(rows.map((r) => [segments(r.path).pop() ?? "", parse(r.value)]));
  const a = by.get("amount");
  const c = by.get("currency");
  if (!a?.ok || !c?.ok || typeof c.v !== "string" || !/^[A-Z]{3}$/.test(c.v)) return null;
  const amount = typeof a.v === "number" ? rows.find((r) => r.path.endsWith("/amount"))?.value.trim() : a.v;
  if (typeof amount !== "string" || !DECIMAL.test(amount)) return null;
  return { amount, currency: c.v };
}

function parentOf(pointer: string): string {
  const i = pointer.lastIndexOf("/");
  return i <= 0 ? "" : pointer.slice(0, i);
}

// plainTerms turns the terms' rows (the leaves, in the Company's order) into plain rows.
export function plainTerms(rows: readonly TermRow[], locale?: string): PlainTerm[] {
  const out: PlainTerm[] = [];
  const used = new Set<number>();
  for (let i = 0; i < rows.length; i++) {
    if (used.has(i)) continue;
    const r = rows[i];
    const parent = parentOf(r.path);
    if (parent !== "") {
      const siblings = rows.map((x, j) => [x, j] as const).filter(([x]) => parentOf(x.path) === parent);
      const m = moneyOf(siblings.map(([x]) => x));
      if (m) {
        for (const [, j] of siblings) used.add(j);
        out.push({ label: labelOfPointer(parent), value: moneyWords(m.amount, m.currency, locale), raw: siblings.map(([x]) => x), path: parent, money: m });
        continue;
      }
    }
    used.add(i);
    const { ok, v } = parse(r.value);
    out.push({ label: labelOfPointer(r.path), value: valueWords(r.value), raw: [r], path: r.path, text: ok && typeof v === "string" ? v : undefined });
  }
  return out;
}
