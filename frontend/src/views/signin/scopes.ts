// A scope as the Sign-in screens show it: the Company's description and hints (spec 4.7), as
// chips, in a list item. A scope without hints, or with a `changes` value Poppydesk does not
// know, is shown as irreversible.

import type { ScopeInfo } from "../../api";
import { append, el } from "../../dom";

export type ScopeChanges = "none" | "reversible" | "irreversible";

// changesOf reads a scope's `changes` hint: a scope without hints, or with a value Poppydesk
// does not recognize, is irreversible (spec 4.7).
export function changesOf(s: Pick<ScopeInfo, "changes" | "hinted">): ScopeChanges {
  if (!s.hinted) return "irreversible";
  return s.changes === "none" || s.changes === "reversible" ? s.changes : "irreversible";
}

const CHANGES_WORDS: Record<ScopeChanges, string> = {
  none: "Changes nothing",
  reversible: "Changes can be undone",
  irreversible: "Changes can’t be undone",
};

// hintTexts returns the hint chips of a scope, in the Company's terms (its claims, spec 4.7).
export function hintTexts(s: ScopeInfo): { kind: string; text: string }[] {
  const out = [{ kind: `changes-${changesOf(s)}`, text: CHANGES_WORDS[changesOf(s)] }];
  if (!s.hinted || s.personal_data) out.push({ kind: "personal", text: "Your personal data" });
  if (!s.hinted) out.push({ kind: "unhinted", text: "No hints from the Company: treated as the most consequential" });
  return out;
}

// scopeItem is a scope's list item, with its checkbox when the user chooses (the plan), without
// when it only reports (the granted scopes).
export function scopeItem(s: ScopeInfo, i: number, box?: HTMLInputElement): HTMLElement {
  const chips = el("span", { class: "si-chips" });
  for (const h of hintTexts(s)) append(chips, [el("span", { class: `si-chip si-${h.kind}` }, h.text)]);
  const label = el(
    "label",
    { for: box ? box.id : undefined, class: "si-scope-label" },
    el("span", { class: "si-scope-desc" }, s.description || s.name),
    " ",
    el("code", { class: "si-scope-name" }, s.name),
  );
  const li = el("li", { class: "si-scope", "data-scope": s.name, "data-changes": changesOf(s) });
  append(li, [box, el("div", { class: "si-scope-body" }, label, chips)]);
  if (s.held) append(li.lastChild as HTMLElement, [el("p", { class: "muted si-held" }, "Already granted: asked for again so that you keep it.")]);
  if (!box) li.dataset.index = String(i);
  return li;
}
