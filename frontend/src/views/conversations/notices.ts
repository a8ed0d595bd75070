// What the open conversation's pane says above the transcript: the Company's request to talk
// with the user (spec 8.10), with Accept — the ONLY way a Direct Conversation is accepted — and
// Decline; and notices (sign-in needed, a Direct Conversation open, the parent conversation,
// messages not yet accepted).

import type { ConversationInvite, ConversationState } from "../../api";
import { el } from "../../dom";

export interface InviteActions {
  // trusted says whether ev is a user's gesture (always, when the view does not require trust).
  trusted(ev: Event): boolean;
  accept(): void;
  decline(): void;
}

// inviteNodes shows the Company's request inv; co is the Company's verified name.
export function inviteNodes(inv: ConversationInvite, co: string, act: InviteActions): HTMLElement {
  const accept = el("button", { type: "button", id: "conv-accept", class: "btn btn-primary" }, "Accept");
  const decline = el("button", { type: "button", id: "conv-decline", class: "btn btn-secondary" }, "Decline");
  accept.addEventListener("click", (ev) => {
    if (!act.trusted(ev)) return;
    accept.disabled = decline.disabled = true;
    act.accept();
  });
  decline.addEventListener("click", () => {
    accept.disabled = decline.disabled = true;
    act.decline();
  });
  return el(
    "div",
    {},
    el("p", { class: "conv-invite-text" }, `${co} asks to talk with you directly.`),
    inv.reason ? el("p", { class: "conv-invite-reason", id: "conv-invite-reason" }, inv.reason) : null,
    el("p", { class: "conv-invite-help" }, "Accept opens a Direct Conversation where you type and read yourself. Nothing is accepted unless you choose Accept."),
    el("div", { class: "conv-invite-actions" }, accept, decline),
  );
}

export interface NoticeActions {
  show(section: string): void;
  open(id: string): void;
}

// noticeNodes are the notices for state s; co is the Company's verified name.
export function noticeNodes(s: ConversationState, co: string, act: NoticeActions): HTMLElement[] {
  const notes: HTMLElement[] = [];
  if (s.authScopes && s.authScopes.length > 0) {
    const b = el("button", { type: "button", class: "btn btn-quiet btn-small conv-link" }, "Open Sign-in");
    b.addEventListener("click", () => act.show("signin"));
    notes.push(el("p", {}, `${co} needs you to sign in (${s.authScopes.join(" ")}) to continue this conversation. `, b));
  }
  if (s.directOpen) {
    const id = s.directOpen;
    const b = el("button", { type: "button", class: "btn btn-quiet btn-small conv-link", id: "conv-open-direct" }, "Open it");
    b.addEventListener("click", () => act.open(id));
    notes.push(el("p", {}, "A Direct Conversation with the Company is open; this conversation waits until it closes. ", b));
  }
  if (s.parent) {
    const id = s.parent;
    const b = el("button", { type: "button", class: "btn btn-quiet btn-small conv-link" }, "Back to the conversation");
    b.addEventListener("click", () => act.open(id));
    notes.push(el("p", {}, "This Direct Conversation belongs to another conversation. ", b));
  }
  if (s.pending > 0) notes.push(el("p", {}, `${s.pending} message(s) not yet accepted by the Company; Poppydesk sends them again with the same ID.`));
  return notes;
}
