// Why a sign-in is asked for, in the words of whoever asked: the model's stated reason, marked
// as the model's, or Poppydesk's own words when it recorded the request after a Company refused
// one of the model's calls. Never Poppydesk's recommendation, never a decision.

import type { ModelRequest } from "../../api";
import { append, el } from "../../dom";

// modelWords renders the model's stated reason, marked as the model's words, never Poppydesk's.
export function modelWords(reason: string): HTMLElement {
  const box = el("div", { class: "si-model", role: "note" });
  append(box, [
    el("p", { class: "si-model-label" }, "Your agent says:"),
    el("blockquote", { class: "si-model-quote" }, reason.trim() ? `“${reason.trim()}”` : "(no reason given)"),
    el("p", { class: "si-model-note" }, "These are your agent’s words, not Poppydesk’s or the Company’s. Nothing happens unless you press a sign-in button."),
  ]);
  return box;
}

// requestWords shows why a sign-in is asked for: Poppydesk's own words when Poppydesk recorded the
// request after a Company's refusal, otherwise the model's stated reason, marked as the model's.
export function requestWords(r: ModelRequest): HTMLElement {
  const need = (r.poppydeskReason ?? "").trim();
  if (!need) return modelWords(r.modelReason);
  const box = el("div", { class: "si-need", role: "note" });
  append(box, [
    el("p", { class: "si-need-label" }, "Poppydesk asks because:"),
    el("p", { class: "si-need-text" }, need),
    el("p", { class: "si-model-note" }, "Your agent’s call was not performed. Nothing happens unless you press a sign-in button."),
  ]);
  return box;
}

export function requestTitle(r: ModelRequest): string {
  const who = r.name || r.company;
  return (r.poppydeskReason ?? "").trim()
    ? `Your agent’s request needs you to sign in to ${who}`
    : `Your agent asks you to sign in to ${who}`;
}
