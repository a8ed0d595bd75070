// One transcript row as DOM: a note, the line to Approvals, or a message with who wrote it (and,
// for a person at the Company, their data: picture or an initial). Text only, via textContent.

import { el } from "../../dom";
import type { Row } from "./transcript";

// drawRow draws r; onApprovals opens the Approvals section.
export function drawRow(r: Row, onApprovals: () => void): HTMLElement {
  if (r.kind === "note") return el("div", { class: "conv-row conv-note" }, r.text);
  if (r.kind === "approval") {
    const b = el("button", { type: "button", class: "btn btn-quiet btn-small conv-link" }, "Open Approvals");
    b.addEventListener("click", onApprovals);
    return el("div", { class: "conv-row conv-note conv-approval" }, `${r.text} `, b);
  }
  const kind = r.kind === "writing" ? "company-agent" : (r.author?.kind ?? "company-agent");
  let avatar: HTMLElement | null = null;
  if (kind === "company-person") {
    avatar = r.picture
      ? el("img", { class: "conv-avatar", src: r.picture, alt: "" })
      : el("span", { class: "conv-avatar conv-avatar-placeholder", "aria-hidden": "true" }, r.initial ?? "?");
  }
  const body = el(
    "div",
    { class: "conv-body" },
    el("div", { class: "conv-author" }, r.label),
    el("div", { class: "conv-text" }, r.text),
    r.data ? el("div", { class: "conv-data" }, r.data) : null,
  );
  const node = el("div", { class: `conv-row conv-msg conv-${kind}${r.kind === "writing" ? " conv-writing" : ""}`, "data-author": kind }, avatar, body);
  if (r.kind === "writing") node.dataset.writing = r.key.slice("writing:".length);
  return node;
}
