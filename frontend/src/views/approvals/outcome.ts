// What happened after a decision, a sentence first ("Shop performed what you approved."), then
// the Company's own message quoted and marked as the Company's words, then the raw response
// behind "Details". Everything from the Company is text.

import type { Outcome } from "../../api";
import { el } from "../../dom";
import { stateWords } from "./words";

// outcomeSentence is Poppydesk's one sentence about out; inConversation says the approval went
// in a conversation, where the Company's agent tells later how it went (Operations 6).
export function outcomeSentence(out: Outcome, companyName: string | undefined, inConversation = false): string {
  const who = companyName || "The Company";
  switch (out.status) {
    case "done":
    case "succeeded":
      if (inConversation) return `${who} accepted your approval in the conversation; its agent says there how it went.`;
      return `${who} performed what you approved.`;
    case "failed":
      return `${who} refused it, so nothing was done.`;
    case "outcome_unknown":
      return `The outcome is unknown: ${who} gave no clear answer. Poppydesk will check with ${who} before anything is asked again.`;
    case "in_progress":
      return `${who} is still working on it. Poppydesk checks again by itself.`;
    case "declined":
      return `You declined. Nothing was sent to ${who}.`;
    case "expired":
      return "The terms expired before your approval could be sent, so nothing was done.";
    case "waiting_for_user":
      return "Waiting for your decision.";
    default:
      return out.message || stateWords(out.status);
  }
}

// companyMessage is the Company's own words about the result: the text it returned, or else the
// top-level "message" or "error_description" string of its JSON response.
export function companyMessage(out: Outcome): string {
  if (out.text) return out.text;
  if (!out.body) return "";
  try {
    const v: unknown = JSON.parse(out.body);
    if (v && typeof v === "object" && !Array.isArray(v)) {
      for (const k of ["message", "error_description"]) {
        const m = (v as Record<string, unknown>)[k];
        if (typeof m === "string" && m.trim() !== "") return m;
      }
    }
  } catch {
    // Not JSON: the raw response is in Details.
  }
  return "";
}

// outcomeNodes shows out; companyName is the verified name of the Company that answered.
export function outcomeNodes(out: Outcome, companyName: string | undefined, inConversation = false): Node[] {
  const who = companyName || "The Company";
  const parts: Node[] = [el("p", { class: "result-status", id: "result-status", role: "status" }, outcomeSentence(out, companyName, inConversation))];
  const words = companyMessage(out);
  if (words) {
    parts.push(
      el(
        "figure",
        { class: "company-quote" },
        el("figcaption", { class: "result-label" }, `What ${who} said, in its own words:`),
        el("blockquote", { class: "company-words", id: "result-text" }, words),
      ),
    );
  }
  if (out.body || out.message || out.httpStatus) {
    const d = el("details", { class: "result-details", id: "result-details" }, el("summary", {}, "The full response"));
    if (out.message) d.append(el("p", { class: "muted", id: "result-message" }, `Poppydesk: ${out.message}.`));
    if (out.body) {
      d.append(
        el("p", { class: "result-label" }, `${who}’s response as received${out.httpStatus ? ` (HTTP status ${out.httpStatus})` : ""}:`),
        el("pre", { class: "company-words", id: "result-body" }, out.body),
      );
    }
    parts.push(d);
  }
  return parts;
}
