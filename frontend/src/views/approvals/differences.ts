// The differences the engine found between the Company's terms, the request and what the agent
// said it intended (agentcore/operations CheckTerms, Operations 5), in plain words: the term's
// label, what the terms say and what the agent asked for, each value as the dialog shows it
// (plainterms.ts). The engine's own sentence, which names JSON Pointers and request fields, stays
// in the item's title.
//
// A difference between the terms and the request (differsFromRequest) makes Approve ask a
// second time, naming each difference, before it sends anything (dialog.ts).

import type { TermsWarning } from "../../api";
import { labelOf, labelOfPointer, moneyWords, valueWords } from "./plainterms";

// The warning codes of agentcore/operations.
const TERM_DIFFERS = "term_differs";
const INTENT_DIFFERS = "intent_differs";
const INTENT_NOT_IN_TERMS = "intent_not_in_terms";
const AMOUNT_NOT_IN_SUMMARY = "amount_not_in_summary";
const TERMS_ABSENT = "terms_absent";
const TERMS_UNREADABLE = "terms_unreadable";

// valueOf shows a warning's JSON value as the dialog shows terms: an amount with its currency,
// anything else as valueWords does.
function valueOf(v: unknown, locale?: string): string {
  if (v === undefined) return "nothing";
  if (v && typeof v === "object" && !Array.isArray(v)) {
    const m = v as Record<string, unknown>;
    const amount = typeof m.amount === "number" ? String(m.amount) : m.amount;
    if (typeof amount === "string" && typeof m.currency === "string" && Object.keys(m).length === 2) return moneyWords(amount, m.currency, locale);
  }
  return valueWords(JSON.stringify(v));
}

// intentKey is the key a warning's Where names ("intent replacement_sku").
function intentKey(where: string | null | undefined): string {
  return (where ?? "").replace(/^intent /, "");
}

// differenceWords says one warning in plain words.
export function differenceWords(w: TermsWarning, locale?: string): string {
  const label = w.term ? labelOfPointer(w.term) : "";
  const both = !!w.term && w.term_value !== undefined && w.request_value !== undefined;
  switch (w.code) {
    case TERM_DIFFERS:
      if (!both) return w.message;
      return `${label}: the terms say ${valueOf(w.term_value, locale)}, but your agent’s request says ${valueOf(w.request_value, locale)}.`;
    case INTENT_DIFFERS:
      if (!both) return w.message;
      return `${label}: the terms say ${valueOf(w.term_value, locale)}, but your agent said it wanted ${valueOf(w.request_value, locale)}.`;
    case INTENT_NOT_IN_TERMS:
      if (!w.where) return w.message;
      return `Your agent said what it wanted for “${labelOf(intentKey(w.where))}”, but the terms say nothing about it.`;
    case AMOUNT_NOT_IN_SUMMARY:
      if (!w.term || w.term_value === undefined) return w.message;
      return `${label.replace(/ › Amount$/, "")}: the terms say ${valueOf(w.term_value, locale)}, but the Company’s description does not mention that amount.`;
    case TERMS_ABSENT:
      return "The Company gave no terms as data, so Poppydesk could not check its description against your agent’s request. Read the description carefully.";
    case TERMS_UNREADABLE:
      return "The Company’s terms could not be read, so nothing could be checked. Read the description carefully.";
    default:
      return w.message;
  }
}

// differsFromRequest says whether a warning is a difference between the terms and what the
// agent asked for (which Approve asks about a second time).
export function differsFromRequest(w: TermsWarning): boolean {
  return w.code === TERM_DIFFERS || w.code === INTENT_DIFFERS || w.code === INTENT_NOT_IN_TERMS || w.code === AMOUNT_NOT_IN_SUMMARY;
}
