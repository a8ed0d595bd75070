// What changed since the previous revision (Operations 5): the summary's words inserted and
// deleted, each changed term with its old and new JSON value, and the expiry. Text only.

import type { Changes, RawJSON } from "../../api";
import { el } from "../../dom";
import { labelOfPointer, valueWords } from "./plainterms";
import { formatTime } from "./words";

// hasChanges says whether c has anything to show.
export function hasChanges(c: Changes | null | undefined): c is Changes {
  return !!c && (c.summary_changed || (c.terms?.length ?? 0) > 0 || c.expiry_changed);
}

// valueText shows a changed value in words (plainterms.ts); the raw values are in the list
// item's title.
function valueText(v: RawJSON): string {
  if (v === undefined) return "(absent)";
  return valueWords(JSON.stringify(v));
}

export function renderChanges(c: Changes): HTMLElement {
  const sec = el("section", { class: "approval-changes", id: "approval-changes", "aria-labelledby": "changes-title" }, el("h3", { id: "changes-title" }, "What changed since the previous version"));
  if (c.summary_changed && c.summary) {
    const p = el("p", { class: "diff" });
    for (const part of c.summary) {
      if (part.op === "insert") p.appendChild(el("ins", {}, part.text));
      else if (part.op === "delete") p.appendChild(el("del", {}, part.text));
      else p.appendChild(document.createTextNode(part.text));
    }
    sec.appendChild(p);
  }
  const terms = c.terms ?? [];
  if (terms.length > 0) {
    const ul = el("ul", {});
    for (const t of terms) {
      const label = t.path === "" ? "All the terms" : labelOfPointer(t.path);
      const text =
        t.kind === "added" ? `${label}: added ${valueText(t.new)}` : t.kind === "removed" ? `${label}: removed (was ${valueText(t.old)})` : `${label}: ${valueText(t.old)} → ${valueText(t.new)}`;
      const li = el("li", {}, text);
      li.title = `${t.path || "/"}: ${JSON.stringify(t.old) ?? "(absent)"} → ${JSON.stringify(t.new) ?? "(absent)"}`;
      ul.appendChild(li);
    }
    sec.appendChild(ul);
  }
  if (c.expiry_changed) {
    sec.appendChild(el("p", {}, `Expiry: ${formatTime(c.old_expires_at ?? "")} → ${formatTime(c.new_expires_at ?? "")}`));
  }
  return sec;
}
