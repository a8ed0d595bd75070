// The approval dialog (Operations extension v2, section 5; docs/DESIGN.md invariants 1, 2 and 4).
//
// The window is the only place an operation is approved. The dialog shows the revision's content
// (terms.ts) with the expiry and a live countdown, and its buttons. Approve sends the (id,
// revision, digest) of the revision on screen, so a revision the User did not see can never be
// approved by this window.
//
// Approve needs a deliberate gesture: it is not the default button, Enter never activates it,
// and it stays disabled for GUARD_MS after the dialog or a new revision appears (the reason is
// shown next to it). Everything from the Company is shown with textContent / text nodes.

import { type ApprovalItem, type ApprovalsAPI, type Outcome, describeError } from "../../api";
import { el } from "../../dom";
import { outcomeNodes } from "./outcome";
import { approvalContent } from "./terms";
import { formatRemaining, formatTime, itemStateWords } from "./words";

// DialogBackend is what the dialog needs from Go: the decisions.
export type DialogBackend = Pick<ApprovalsAPI, "approve" | "decline" | "checkOutcome">;

export interface DialogOptions {
  // now is the clock (milliseconds since the epoch).
  now?: () => number;
  // guardMs is how long Approve stays disabled after content appears.
  guardMs?: number;
  // requireTrusted makes Approve ignore clicks that no user made (synthetic events). Tests
  // in jsdom turn it off; the window keeps it on.
  requireTrusted?: boolean;
}

export const GUARD_MS = 1000;

const FOCUSABLE = 'button:not([disabled]), [href], [tabindex="0"], summary';

export class ApprovalDialog {
  readonly root: HTMLElement;
  private readonly box: HTMLElement;
  private readonly body: HTMLElement;
  private readonly footer: HTMLElement;
  private readonly approveBtn: HTMLButtonElement;
  private readonly declineBtn: HTMLButtonElement;
  private readonly closeBtn: HTMLButtonElement;
  private readonly checkBtn: HTMLButtonElement;
  private readonly guardNote: HTMLElement;
  private readonly expiry: HTMLElement;
  private readonly progress: HTMLElement;
  private readonly result: HTMLElement;
  private readonly now: () => number;
  private readonly guardMs: number;
  private readonly requireTrusted: boolean;
  private item: ApprovalItem | null = null;
  private guardUntil = 0;
  private guardTimer: ReturnType<typeof setTimeout> | undefined;
  private tick: ReturnType<typeof setInterval> | undefined;
  private busy = false;
  private decided = false;
  // hint is a note shown under the buttons until the content changes (e.g. "Enter does not
  // approve").
  private hint = "";
  // enterDown is true while Enter is held on Approve: the click a browser synthesizes from it
  // is ignored.
  private enterDown = false;
  private returnFocus: HTMLElement | null = null;
  onClosed: () => void = () => {};
  onDecided: () => void = () => {};

  constructor(
    private readonly doc: Document,
    private readonly backend: DialogBackend,
    opts: DialogOptions = {},
  ) {
    this.now = opts.now ?? (() => Date.now());
    this.guardMs = opts.guardMs ?? GUARD_MS;
    this.requireTrusted = opts.requireTrusted ?? true;

    this.body = el("div", { class: "approval-body", id: "approval-body", tabindex: 0, "aria-label": "Terms of the approval" });
    this.expiry = el("p", { class: "approval-expiry", id: "approval-expiry" });
    this.guardNote = el("p", { class: "approval-guard", id: "approval-guard", "aria-live": "polite" });
    this.progress = el("p", { class: "approval-progress", id: "approval-progress", role: "status", hidden: true });
    this.result = el("div", { class: "approval-result", id: "approval-result", hidden: true });
    this.declineBtn = el("button", { type: "button", class: "btn", id: "decline-button" }, "Decline");
    this.approveBtn = el("button", { type: "button", class: "btn btn-approve", id: "approve-button", "aria-describedby": "approval-guard" }, "Approve");
    this.closeBtn = el("button", { type: "button", class: "btn", id: "close-button" }, "Close");
    this.checkBtn = el("button", { type: "button", class: "btn", id: "check-outcome-button", hidden: true }, "Check the outcome");
    this.footer = el(
      "div",
      { class: "approval-footer" },
      el("div", { class: "approval-footer-text" }, this.expiry, this.guardNote, this.progress),
      el("div", { class: "approval-actions" }, this.closeBtn, this.checkBtn, this.declineBtn, this.approveBtn),
    );
    this.box = el(
      "div",
      { class: "approval-dialog", id: "approval-dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": "approval-title" },
      this.body,
      this.result,
      this.footer,
    );
    this.root = el("div", { class: "approval-overlay", id: "approval-overlay" }, this.box);

    this.approveBtn.addEventListener("click", (ev) => {
      if (this.requireTrusted && !ev.isTrusted) return;
      // A click the browser makes from Enter (activation while Enter is down) is not a gesture.
      if (this.enterDown) return;
      void this.approve();
    });
    this.approveBtn.addEventListener("blur", () => (this.enterDown = false));
    this.declineBtn.addEventListener("click", () => void this.decline());
    this.closeBtn.addEventListener("click", () => this.close());
    this.checkBtn.addEventListener("click", () => void this.checkOutcome());
    this.root.addEventListener("keydown", (ev) => this.onKey(ev));
    this.root.addEventListener("keypress", (ev) => {
      if (ev.key === "Enter" && ev.target === this.approveBtn) ev.preventDefault();
    });
    this.root.addEventListener("keyup", (ev) => {
      if (ev.key === "Enter") this.enterDown = false;
    });
  }

  get current(): ApprovalItem | null {
    return this.item;
  }

  get isOpen(): boolean {
    return this.root.isConnected;
  }

  // open shows item (a fresh dialog: the guard starts).
  open(item: ApprovalItem): void {
    if (!this.isOpen) {
      this.returnFocus = this.doc.activeElement as HTMLElement | null;
      this.doc.body.appendChild(this.root);
      this.doc.getElementById("app")?.setAttribute("inert", "");
    }
    this.decided = false;
    this.busy = false;
    this.progress.hidden = true;
    this.result.hidden = true;
    this.result.replaceChildren();
    this.render(item, null);
    this.startTimers();
    this.body.focus();
  }

  // update replaces the content when the item changed. A new revision — or the same revision for
  // a request that changed (the digest covers both, so Approve would name the new request) —
  // restarts the guard and shows what changed; a state change (for example after a decision
  // elsewhere) is shown as is.
  update(item: ApprovalItem): void {
    const old = this.item;
    if (!old || old.id !== item.id) return this.open(item);
    if (old.current.revision !== item.current.revision || old.current.digest !== item.current.digest) {
      this.decided = false;
      this.busy = false;
      this.progress.hidden = true;
      this.result.hidden = true;
      this.render(item, old);
      this.startTimers();
      return;
    }
    if (this.busy) return; // the decision in flight reports itself
    if (old.state !== item.state) {
      // A decided item reads as a record: its heading and words change with its state.
      const top = this.body.scrollTop;
      this.render(item, null);
      this.body.scrollTop = top;
    }
    this.item = item;
    this.refreshButtons();
    if (!item.decidable && item.result && !this.decided) this.showOutcome(item.result);
  }

  close(): void {
    this.stopTimers();
    if (!this.isOpen) return;
    this.root.remove();
    this.doc.getElementById("app")?.removeAttribute("inert");
    this.item = null;
    if (this.returnFocus && this.returnFocus.isConnected) this.returnFocus.focus();
    this.onClosed();
  }

  // approveAllowed says whether Approve can be used now, and why not.
  approveBlocked(): string {
    const it = this.item;
    if (!it) return "Nothing to approve.";
    if (this.busy) return "Sending your decision…";
    if (it.violation) return "The Company broke the approval rules for these terms, so they can’t be approved.";
    if (this.decided || !it.decidable) return "This approval was already decided.";
    if (this.expired()) return "This version of the terms has expired, so it can no longer be approved.";
    const left = this.guardUntil - this.now();
    if (left > 0) return "Approve becomes available in a moment, so a stray click or key press can’t approve. Read the terms first.";
    return "";
  }

  private expired(): boolean {
    const it = this.item;
    if (!it) return true;
    const t = Date.parse(it.current.expiresAt);
    return !Number.isNaN(t) && this.now() >= t;
  }

  private startTimers(): void {
    this.stopTimers();
    this.guardUntil = this.now() + this.guardMs;
    this.guardTimer = setTimeout(() => this.refreshButtons(), this.guardMs + 10);
    this.tick = setInterval(() => this.refreshButtons(), 1000);
    this.refreshButtons();
  }

  private stopTimers(): void {
    if (this.guardTimer !== undefined) clearTimeout(this.guardTimer);
    if (this.tick !== undefined) clearInterval(this.tick);
    this.guardTimer = this.tick = undefined;
  }

  // refreshButtons updates the countdown and the buttons; it runs every second and when the
  // guard ends.
  refreshButtons(): void {
    const it = this.item;
    if (!it) return;
    const t = Date.parse(it.current.expiresAt);
    const left = Number.isNaN(t) ? 0 : t - this.now();
    const expired = this.expired();
    const open = it.decidable && !this.decided;
    if (open) {
      this.expiry.textContent = expired
        ? `Expired at ${formatTime(it.current.expiresAt)}. The Company no longer accepts an approval of this version; ask your agent to request it again.`
        : `Expires in ${formatRemaining(left)} (at ${formatTime(it.current.expiresAt)}).`;
      this.expiry.classList.toggle("expired", expired);
    } else {
      // A record: its heading says what happened and when; the footer only closes it. A Company
      // that broke the approval rules for this item is named first (itemStateWords).
      this.expiry.textContent = it.violation ? itemStateWords(it) : this.decided && it.decidable ? "Your decision is recorded." : "";
      this.expiry.classList.remove("expired");
    }
    const why = this.approveBlocked();
    this.approveBtn.disabled = why !== "";
    this.declineBtn.disabled = !open || this.busy || expired;
    this.approveBtn.hidden = this.declineBtn.hidden = !open;
    this.guardNote.textContent = open && !this.busy ? why || this.hint : "";
    // Nothing more is sent for an item whose revision the Company reused (its violation).
    this.checkBtn.hidden = it.state !== "outcome_unknown" || !!it.violation || this.busy;
    this.checkBtn.disabled = this.busy;
    if (expired && open) this.stopTick();
  }

  private stopTick(): void {
    if (this.tick !== undefined) clearInterval(this.tick);
    this.tick = undefined;
  }

  private onKey(ev: KeyboardEvent): void {
    if (ev.key === "Escape") {
      ev.preventDefault();
      this.close();
      return;
    }
    if (ev.key === "Enter" && (ev.target === this.approveBtn || this.doc.activeElement === this.approveBtn)) {
      // Enter never approves: the User clicks Approve or presses Space on it.
      ev.preventDefault();
      this.enterDown = true;
      ev.stopPropagation();
      this.hint = "Enter does not approve. Click Approve, or press Space while it is focused.";
      this.guardNote.textContent = this.hint;
      return;
    }
    if (ev.key === "Tab") {
      const items = Array.from(this.box.querySelectorAll<HTMLElement>(FOCUSABLE)).filter((e) => !e.hidden && !e.closest("[hidden]"));
      if (items.length === 0) return;
      const first = items[0];
      const last = items[items.length - 1];
      const active = this.doc.activeElement as HTMLElement | null;
      if (ev.shiftKey && (active === first || !this.box.contains(active))) {
        ev.preventDefault();
        last.focus();
      } else if (!ev.shiftKey && (active === last || !this.box.contains(active))) {
        ev.preventDefault();
        first.focus();
      }
    }
  }

  private async approve(): Promise<void> {
    const it = this.item;
    if (!it || this.approveBlocked() !== "") return;
    // The revision and digest of what is on screen: never re-read before sending.
    const { revision, digest } = it.current;
    this.busy = true;
    this.refreshButtons();
    this.showProgress(`Sending your approval to ${it.companyName}…`);
    try {
      const out = await this.backend.approve(it.id, revision, digest);
      this.decided = true;
      this.busy = false;
      this.showOutcome(out);
    } catch (err) {
      this.busy = false;
      this.showError(`Approving failed: ${describeError(err)}`);
    }
    this.refreshButtons();
    this.onDecided();
  }

  private async decline(): Promise<void> {
    const it = this.item;
    if (!it || this.busy || this.decided) return;
    this.busy = true;
    this.refreshButtons();
    this.showProgress("Declining…");
    try {
      await this.backend.decline(it.id, it.current.revision);
      this.decided = true;
      this.busy = false;
      this.progress.hidden = true;
      this.result.hidden = false;
      this.result.replaceChildren(el("p", { class: "result-status", id: "result-status" }, `You declined. Nothing was sent to ${it.companyName}.`));
    } catch (err) {
      this.busy = false;
      this.showError(`Declining failed: ${describeError(err)}`);
    }
    this.refreshButtons();
    this.onDecided();
  }

  // checkNow asks the Company for the outcome of an outcome-unknown item shown in the dialog.
  checkNow(): void {
    if (this.item?.state === "outcome_unknown" && !this.item.violation) void this.checkOutcome();
  }

  private async checkOutcome(): Promise<void> {
    const it = this.item;
    if (!it || this.busy) return;
    this.busy = true;
    this.refreshButtons();
    this.showProgress(`Asking ${it.companyName} what happened (the same approval is sent again; nothing is done twice)…`);
    try {
      const out = await this.backend.checkOutcome(it.id);
      this.busy = false;
      this.decided = true;
      this.showOutcome(out);
    } catch (err) {
      this.busy = false;
      this.showError(`Checking the outcome failed: ${describeError(err)}`);
    }
    this.refreshButtons();
    this.onDecided();
  }

  private showProgress(text: string): void {
    this.progress.hidden = false;
    this.progress.textContent = text;
  }

  private showError(text: string): void {
    this.progress.hidden = true;
    this.result.hidden = false;
    this.result.replaceChildren(el("p", { class: "result-error", id: "result-error", role: "alert" }, text));
  }

  // showOutcome shows Poppydesk's status in its own words, then the Company's words verbatim.
  private showOutcome(out: Outcome): void {
    const it = this.item;
    this.progress.hidden = true;
    this.result.hidden = false;
    const inConversation = !!it && (it.interface === "conversation" || !!it.request?.conversation);
    this.result.replaceChildren(...outcomeNodes(out, it?.companyName, inConversation));
    if (it && out.status === "outcome_unknown") {
      this.item = { ...it, state: "outcome_unknown", decidable: false };
      this.decided = false;
    }
  }

  private render(item: ApprovalItem, replaced: ApprovalItem | null): void {
    this.item = item;
    this.hint = "";
    // Which revision is on screen (what Approve sends), for assistive tools and tests.
    this.box.dataset.revision = item.current.revision;
    this.box.dataset.approval = item.id;
    this.body.replaceChildren(...approvalContent(this.doc, item, replaced !== null));
    this.body.scrollTop = 0;
  }
}
