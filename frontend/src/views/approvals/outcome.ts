// What happened after a decision: Poppydesk's status in its own words, then the Company's words
// verbatim (its text and its response body), as text.

import type { Outcome } from "../../api";
import { el } from "../../dom";
import { stateWords } from "./words";

// outcomeNodes shows out; companyName is the verified name of the Company that answered.
export function outcomeNodes(out: Outcome, companyName: string | undefined): Node[] {
  const who = companyName ?? "The Company";
  const parts: Node[] = [el("p", { class: "result-status", id: "result-status", role: "status" }, out.message || stateWords(out.status))];
  if (out.text) {
    parts.push(el("p", { class: "result-label" }, `${who} said:`), el("p", { class: "company-words", id: "result-text" }, out.text));
  }
  if (out.body) {
    parts.push(
      el("p", { class: "result-label" }, `${who}’s response${out.httpStatus ? ` (HTTP ${out.httpStatus})` : ""}:`),
      el("pre", { class: "company-words", id: "result-body" }, out.body),
    );
  }
  return parts;
}
