// The approval dialog (Operations extension v2, section 5; docs/DESIGN.md invariants 1, 2 and 4).
//
// The window is the only place an operation is approved. The dialog shows the revision's content
// (terms.ts) with the expiry and a live countdown, and its buttons. Approve sends the (id,
// revision, digest) of the revision on screen, so a revision the User did not see can never be
// approved by this window.
//
// It behaves as the operating system's own confirmations do:
//
//   - Modal: everything behind it is inert (the skip link included), Tab and Shift+Tab stay
//     inside it, Escape closes it in every state (before a decision, after one, after an error),
//     and the focus goes back to where it was when the dialog opened. A screen reader hears an
//     alert dialog named by its title and described by the Company and the money line.
//   - No accidental decisions: Approve and Decline act only on a press (a pointer press, or Space
//     on the focused button) that began on that button after the guard: GUARD_MS after the
//     dialog, a new version of the terms or the window's focus came, restarted by every press
//     and key that lands while it runs. A burst of clicks or keys that began before or at paint
//     therefore never decides anything, however long it lasts; neither does the click that
//     brings the window back from another application. The buttons are never `disabled`
//     during the guard (aria-disabled instead), so the presses that land on them reach the guard.
//     Approve is not the default button, and Enter never activates it.
//   - Terms that differ from what the agent asked (differences.ts) make Approve ask a second
//     time, naming each difference in plain words; only a second guarded press approves.
//
// Everything from the Company is shown with textContent / text nodes.

import { type ApprovalItem, type ApprovalsAPI, type Outcome, describeError } from "../../api";
import { el, isTab } from "../../dom";
import { differenceWords, differsFromRequest } from "./differences";
import { outcomeNodes } from "./outcome";
import { approvalContent } from "./terms";
import { formatRemaining, formatTime, itemStateWords } from "./words";

// DialogBackend is what the dialog needs from Go: the decisions.
export type DialogBackend = Pick<ApprovalsAPI, "approve" | "decline" | "checkOutcome">;

export interface DialogOptions {
  // now is the clock (milliseconds since the epoch).
  now?: () => number;
  // guardMs is how long Approve and Decline wait after content appears or the last input.
  guardMs?: number;
  // requireTrusted makes the decisions ignore clicks that no user made (synthetic events).
  // Tests in jsdom turn it off; the window keeps it on.
  requireTrusted?: boolean;
}

export const GUARD_MS = 1000;

const FOCUSABLE = 'button:not([disabled]), [href], [tabindex="0"], summary';

// The inputs that restart the guard: a press of a pointer or a key. Moving the pointer or the
// wheel is reading, not deciding.
const PRESSES = ["pointerdown", "mousedown", "touchstart", "keydown"] as const;
const MODIFIERS = new Set(["Shift", "Control", "Alt", "Meta", "AltGraph"]);

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
  private readonly confirmBox: HTMLElement;
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
  // pressed is the decision button the current press began on after the guard (null when the
  // press began elsewhere or during the guard).
  private pressed: HTMLButtonElement | null = null;
  // confirming is true while Approve asks a second time about terms that differ.
  private confirming = false;
  // hint is a note shown under the buttons until the content changes (e.g. "Enter does not
  // approve").
  private hint = "";
  // enterDown is true while Enter is held on Approve: the click a browser synthesizes from it
  // is ignored.
  private enterDown = false;
  // returnFocus is where the focus goes back to on close: the element, or an element with the
  // same id when the list drew its row again meanwhile.
  private returnFocus: { el: HTMLElement | null; id: string } = { el: null, id: "" };
  // inerted are the page's parts this dialog made inert (and gives back on close).
  private inerted: Element[] = [];
  onClosed: () => void = () => {};
  onDecided: () => void = () => {};

  private readonly onPress = (ev: Event) => this.press(ev);
  private readonly onKeyDown = (ev: KeyboardEvent) => this.onKey(ev);
  private readonly onFocusIn = (ev: FocusEvent) => this.keepFocus(ev);
  // away is true while the user is in another application (the page lost the focus, or did not
  // have it when the dialog opened): coming back restarts the guard, so the click that brings
  // the window back never decides.
  private away = false;
  private readonly onWindowFocus = () => {
    if (!this.away) return;
    this.away = false;
    this.restartGuard();
  };
  private readonly onWindowBlur = () => (this.away = true);

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
    this.confirmBox = el("div", { class: "approval-confirm", id: "approval-confirm", role: "alert", hidden: true });
    this.progress = el("p", { class: "approval-progress", id: "approval-progress", role: "status", hidden: true });
    this.result = el("div", { class: "approval-result", id: "approval-result", hidden: true });
    this.declineBtn = el("button", { type: "button", class: "btn", id: "decline-button", "aria-describedby": "approval-guard" }, "Decline");
    this.approveBtn = el("button", { type: "button", class: "btn btn-approve", id: "approve-button", "aria-describedby": "approval-guard" }, "Approve");
    this.closeBtn = el("button", { type: "button", class: "btn", id: "close-button" }, "Close");
    this.checkBtn = el("button", { type: "button", class: "btn", id: "check-outcome-button", hidden: true }, "Check the outcome");
    this.footer = el(
      "div",
      { class: "approval-footer" },
      this.confirmBox,
      el("div", { class: "approval-footer-text" }, this.expiry, this.guardNote, this.progress),
      el("div", { class: "approval-actions" }, this.closeBtn, this.checkBtn, this.declineBtn, this.approveBtn),
    );
    this.box = el(
      "div",
      {
        class: "approval-dialog",
        id: "approval-dialog",
        role: "alertdialog",
        "aria-modal": "true",
        "aria-labelledby": "approval-title",
        "aria-describedby": "approval-description",
      },
      this.body,
      this.result,
      this.footer,
    );
    this.root = el("div", { class: "approval-overlay", id: "approval-overlay" }, this.box);

    this.approveBtn.addEventListener("click", (ev) => {
      if (!this.gesture(ev, this.approveBtn)) return;
      if (this.needsConfirmation()) return this.askAgain();
      void this.approve();
    });
    this.declineBtn.addEventListener("click", (ev) => {
      if (this.gesture(ev, this.declineBtn)) void this.decline();
    });
    this.approveBtn.addEventListener("blur", () => (this.enterDown = false));
    this.closeBtn.addEventListener("click", () => this.close());
    this.checkBtn.addEventListener("click", () => void this.checkOutcome());
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

  // isRecord says whether the dialog shows a decided item (nothing is waiting on it).
  get isRecord(): boolean {
    return !!this.item && (!this.item.decidable || this.decided);
  }

  // open shows item (a fresh dialog: the guard starts).
  open(item: ApprovalItem): void {
    if (!this.isOpen) {
      const active = this.doc.activeElement as HTMLElement | null;
      this.returnFocus = { el: active, id: active?.id ?? "" };
      this.doc.body.appendChild(this.root);
      this.makeInert();
      for (const name of PRESSES) this.doc.addEventListener(name, this.onPress, true);
      this.doc.addEventListener("keydown", this.onKeyDown, true);
      this.doc.addEventListener("focusin", this.onFocusIn, true);
      this.doc.defaultView?.addEventListener("focus", this.onWindowFocus);
      this.doc.defaultView?.addEventListener("blur", this.onWindowBlur);
      this.away = !this.doc.hasFocus();
    }
    this.decided = false;
    this.busy = false;
    this.confirming = false;
    this.progress.hidden = true;
    this.result.hidden = true;
    this.result.replaceChildren();
    this.render(item, null);
    this.startTimers();
    this.guardFromPaint();
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
      this.confirming = false;
      this.progress.hidden = true;
      this.result.hidden = true;
      this.render(item, old);
      this.startTimers();
      this.guardFromPaint();
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
    this.keepFocusInside();
  }

  close(): void {
    this.stopTimers();
    if (!this.isOpen) return;
    for (const name of PRESSES) this.doc.removeEventListener(name, this.onPress, true);
    this.doc.removeEventListener("keydown", this.onKeyDown, true);
    this.doc.removeEventListener("focusin", this.onFocusIn, true);
    this.doc.defaultView?.removeEventListener("focus", this.onWindowFocus);
    this.doc.defaultView?.removeEventListener("blur", this.onWindowBlur);
    this.root.remove();
    for (const e of this.inerted) e.removeAttribute("inert");
    this.inerted = [];
    this.item = null;
    this.confirming = false;
    this.onClosed();
    this.restoreFocus();
  }

  // restoreFocus puts the focus back where it was when the dialog opened. The element may have
  // been drawn again meanwhile (a row of the list): the one with its id then takes it.
  restoreFocus(): void {
    const { el: was, id } = this.returnFocus;
    const target = was && was.isConnected ? was : id ? this.doc.getElementById(id) : null;
    if (target && target !== this.doc.body) target.focus();
  }

  // approveBlocked says why Approve can't be used now ("" when it can).
  approveBlocked(): string {
    const it = this.item;
    if (!it) return "Nothing to approve.";
    if (this.busy) return "Sending your decision…";
    if (it.violation) return "The Company broke the approval rules for these terms, so they can’t be approved.";
    if (this.decided || !it.decidable) return "This approval was already decided.";
    if (this.expired()) return "This version of the terms has expired, so it can no longer be approved.";
    if (this.guarding()) return "Approve and Decline work one second after your last click or key press, so a stray click or key can’t decide. Read the terms first.";
    return "";
  }

  private guarding(): boolean {
    return this.now() < this.guardUntil;
  }

  private expired(): boolean {
    const it = this.item;
    if (!it) return true;
    const t = Date.parse(it.current.expiresAt);
    return !Number.isNaN(t) && this.now() >= t;
  }

  // makeInert makes everything in the page but the dialog inert: the application, the skip
  // link and anything else a view added to the body.
  private makeInert(): void {
    for (const e of Array.from(this.doc.body.children)) {
      if (e === this.root || e.hasAttribute("inert") || e.classList.contains("modal-top")) continue;
      e.setAttribute("inert", "");
      this.inerted.push(e);
    }
  }

  // press is every pointer or key press in the page while the dialog is open. During the guard
  // it restarts the guard; after it, it arms the decision button it began on.
  private press(ev: Event): void {
    // A modifier alone (Shift of Shift+Tab) presses nothing.
    if (ev.type === "keydown" && MODIFIERS.has((ev as KeyboardEvent).key)) return;
    if (this.guarding()) {
      this.pressed = null;
      this.restartGuard();
      return;
    }
    if (ev.type === "keydown") {
      const k = (ev as KeyboardEvent).key;
      // Space activates the focused button on its release: the press that arms it.
      const t = this.doc.activeElement;
      this.pressed = k === " " && (t === this.approveBtn || t === this.declineBtn) ? (t as HTMLButtonElement) : null;
      return;
    }
    const target = ev.target instanceof Node ? ev.target : null;
    this.pressed = target && this.approveBtn.contains(target) ? this.approveBtn : target && this.declineBtn.contains(target) ? this.declineBtn : null;
  }

  // restartGuard starts the guard again from now (the window's focus came back, or an input
  // landed while it ran).
  restartGuard(): void {
    if (!this.item || !this.isOpen) return;
    this.guardUntil = this.now() + this.guardMs;
    this.pressed = null;
    if (this.guardTimer !== undefined) clearTimeout(this.guardTimer);
    this.guardTimer = setTimeout(() => this.refreshButtons(), this.guardMs + 10);
    this.refreshButtons();
  }

  // gesture says whether a click on btn is the user's deliberate decision: made by the user, not
  // from Enter, on a button that can act, from a press that began on it after the guard.
  private gesture(ev: MouseEvent, btn: HTMLButtonElement): boolean {
    if (this.requireTrusted && !ev.isTrusted) return false;
    if (btn === this.approveBtn && this.enterDown) return false; // a click the browser makes from Enter
    const armed = this.pressed === btn;
    this.pressed = null;
    if (btn.getAttribute("aria-disabled") === "true" || !armed) return false;
    return true;
  }

  private needsConfirmation(): boolean {
    return !this.confirming && (this.item?.warnings ?? []).some(differsFromRequest);
  }

  // askAgain turns Approve into the second confirmation for terms that differ from the request:
  // the differences in plain words, and Approve again after a new guard.
  private askAgain(): void {
    const it = this.item;
    if (!it) return;
    this.confirming = true;
    const ul = el("ul", {});
    for (const w of (it.warnings ?? []).filter(differsFromRequest)) ul.appendChild(el("li", {}, differenceWords(w)));
    this.confirmBox.replaceChildren(
      el("p", { class: "confirm-title", id: "approval-confirm-title" }, `These terms are not what your agent asked for. Approve them anyway?`),
      ul,
      el("p", { class: "muted" }, `Only what the terms say will be done. Decline if this is not what you want.`),
    );
    this.confirmBox.hidden = false;
    this.approveBtn.textContent = "Approve these terms";
    this.restartGuard();
  }

  private startTimers(): void {
    this.stopTimers();
    this.guardUntil = this.now() + this.guardMs;
    this.pressed = null;
    this.guardTimer = setTimeout(() => this.refreshButtons(), this.guardMs + 10);
    this.tick = setInterval(() => this.refreshButtons(), 1000);
    this.refreshButtons();
  }

  private stopTimers(): void {
    if (this.guardTimer !== undefined) clearTimeout(this.guardTimer);
    if (this.tick !== undefined) clearInterval(this.tick);
    this.guardTimer = this.tick = undefined;
  }

  // guardFromPaint restarts the guard at the frame that shows new content (the second animation
  // frame callback runs after that frame is painted): the guard counts from what the user could
  // see, not from when the page was built.
  private guardFromPaint(): void {
    const w = this.doc.defaultView;
    if (!w || typeof w.requestAnimationFrame !== "function") return;
    const id = this.item?.id;
    const rev = this.item?.current.revision;
    // data-painted names the revision on screen once it is painted (tests wait for it before
    // they wait for the guard's end).
    delete this.box.dataset.painted;
    w.requestAnimationFrame(() =>
      w.requestAnimationFrame(() => {
        if (!this.isOpen || this.item?.id !== id || this.item?.current.revision !== rev) return;
        if (!this.isRecord) this.restartGuard();
        this.box.dataset.painted = rev;
      }),
    );
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
    const guarding = this.guarding();
    this.approveBtn.setAttribute("aria-disabled", String(why !== ""));
    this.declineBtn.setAttribute("aria-disabled", String(!open || this.busy || expired || guarding));
    this.approveBtn.hidden = this.declineBtn.hidden = !open;
    this.confirmBox.hidden = !open || !this.confirming;
    if (!this.confirming) this.approveBtn.textContent = "Approve";
    this.guardNote.textContent = open && !this.busy ? why || this.hint : "";
    // Nothing more is sent for an item whose revision the Company reused (its violation).
    this.checkBtn.hidden = it.state !== "outcome_unknown" || !!it.violation || this.busy;
    this.checkBtn.disabled = this.busy;
    if (expired && open) this.stopTick();
    this.keepFocusInside();
  }

  private stopTick(): void {
    if (this.tick !== undefined) clearInterval(this.tick);
    this.tick = undefined;
  }

  // focusables are the dialog's controls that take the focus now, in order.
  private focusables(): HTMLElement[] {
    return Array.from(this.box.querySelectorAll<HTMLElement>(FOCUSABLE)).filter((e) => !e.hidden && !e.closest("[hidden]"));
  }

  // underneath says whether a dialog above this one is open (closing.ts): this one then leaves
  // the keyboard and the focus to it.
  private underneath(): boolean {
    return this.doc.querySelector(".modal-top") !== null;
  }

  // keepFocus brings the focus back into the dialog when it lands outside it.
  private keepFocus(ev: FocusEvent): void {
    const t = ev.target;
    if (this.underneath()) return;
    if (t instanceof Node && !this.box.contains(t)) {
      ev.stopPropagation();
      this.body.focus();
    }
  }

  // keepFocusInside moves the focus to Close when the focused control was hidden (the
  // decision buttons once decided): Escape and Tab keep working.
  private keepFocusInside(): void {
    if (!this.isOpen || this.underneath()) return;
    const a = this.doc.activeElement;
    const lost = !a || a === this.doc.body || !this.box.contains(a) || (a as HTMLElement).hidden;
    if (lost) (this.isRecord ? this.closeBtn : this.body).focus();
  }

  private onKey(ev: KeyboardEvent): void {
    if (this.underneath()) return;
    if (ev.key === "Escape") {
      ev.preventDefault();
      ev.stopPropagation();
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
    if (isTab(ev)) {
      // Tab and Shift+Tab go round the dialog's controls, here rather than by the browser's
      // own navigation, which can leave the page (WebKitGTK hands the focus to the window).
      const items = this.focusables();
      ev.preventDefault();
      if (items.length === 0) return;
      const i = items.indexOf(this.doc.activeElement as HTMLElement);
      const next = i < 0 ? (ev.shiftKey ? items.length - 1 : 0) : (i + (ev.shiftKey ? -1 : 1) + items.length) % items.length;
      items[next].focus();
    }
  }

  private async approve(): Promise<void> {
    const it = this.item;
    if (!it || this.approveBlocked() !== "") return;
    // The revision and digest of what is on screen: never re-read before sending.
    const { revision, digest } = it.current;
    this.busy = true;
    this.confirming = false;
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
    this.confirming = false;
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
