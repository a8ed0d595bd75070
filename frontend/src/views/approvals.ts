// The Approvals section and the approval dialog (Operations extension v2, section 5; DESIGN.md
// invariants 1, 2 and 4).
//
// The window is the only place an operation is approved. The dialog shows the Company's verified
// name and domain (from discovery, never from the operation), the revision's summary rendered
// from the engine's safe structure (summary.ts), the terms as text rows, the differences the
// engine found between the terms, the request and the model's intent, what changed since the
// previous revision, the expiry with a live countdown, the account and Session, and what was
// requested. Approve sends the (id, revision, digest) of the revision on screen, so a revision
// the User did not see can never be approved by this window.
//
// Approve needs a deliberate gesture: it is not the default button, Enter never activates it,
// and it stays disabled for GUARD_MS after the dialog or a new revision appears (the reason is
// shown next to it). Everything from the Company is shown with textContent / text nodes.

import { append, el } from "../dom";
import type { SectionView, ViewContext } from "../app";
import { renderSummary, type Summary } from "./summary";
import * as Go from "../../wailsjs/go/app/Approvals";

// ---- the JSON the Go service app.Approvals returns (app/approvals.go) ----

export interface TermRow {
  path: string;
  value: string;
}
export interface ApprovalRevision {
  operationId: string;
  revision: string;
  summary: Summary;
  summaryText: string;
  terms: TermRow[] | null;
  expiresAt: string;
  digest: string;
}
export interface TermChange {
  path: string;
  kind: string;
  old?: unknown;
  new?: unknown;
}
export interface Changes {
  summary_changed: boolean;
  summary?: { op: string; text: string }[] | null;
  terms?: TermChange[] | null;
  expiry_changed: boolean;
  old_expires_at?: string;
  new_expires_at?: string;
}
export interface TermsWarning {
  code: string;
  message: string;
  term?: string;
  where?: string;
}
export interface RequestView {
  method: string;
  url: string;
  body: string;
  tool: string;
  arguments: string;
}
export interface Outcome {
  status: string;
  approvalId: string;
  httpStatus: number;
  body: string;
  text: string;
  message: string;
}
export interface ApprovalItem {
  id: string;
  company: string;
  companyName: string;
  companyDomain: string;
  account: string;
  sid: string;
  interface: string;
  state: string;
  decidable: boolean;
  current: ApprovalRevision;
  previous?: ApprovalRevision | null;
  changes?: Changes | null;
  warnings: TermsWarning[] | null;
  request: RequestView;
  result?: Outcome | null;
  created: string;
  updated: string;
}
export interface ApprovalsStatus {
  available: boolean;
  problem: string;
  demo: boolean;
  demoCompany: string;
}
export interface ChangedEvent {
  kind: string;
  id: string;
  state: string;
}

// The event app.Approvals emits when an item is created or changes.
export const EVENT_APPROVALS_CHANGED = "approvals:changed";
// The event app.Approvals emits when the example agent says something or finishes.
export const EVENT_EXAMPLE_AGENT = "approvals:example-agent";

// ExampleAgentRun is the example agent's transcript (app.ExampleAgentRun): its own words.
export interface ExampleAgentRun {
  running: boolean;
  lines: string[];
  error: string;
}

export interface ApprovalsBackend {
  status(): Promise<ApprovalsStatus>;
  list(): Promise<ApprovalItem[] | null>;
  get(id: string): Promise<ApprovalItem>;
  approve(id: string, revision: string, digest: string): Promise<Outcome>;
  decline(id: string, revision: string): Promise<void>;
  checkOutcome(id: string): Promise<Outcome>;
  startDemoExchange(kind: string): Promise<string>;
  // runExampleAgent starts the scripted example agent (demo mode; a user gesture).
  runExampleAgent(): Promise<void>;
  exampleAgent(): Promise<ExampleAgentRun>;
  on(event: string, cb: (...data: unknown[]) => void): () => void;
}

export interface ApprovalsOptions {
  // now is the clock (milliseconds since the epoch).
  now?: () => number;
  // guardMs is how long Approve stays disabled after content appears.
  guardMs?: number;
  // requireTrusted makes Approve ignore clicks that no user made (synthetic events). Tests
  // in jsdom turn it off; the window keeps it on.
  requireTrusted?: boolean;
  // raise brings the window to the front when a new approval arrives (the Wails runtime in the
  // desktop window; nothing in the browser-testable bridge).
  raise?: () => void;
}

export const GUARD_MS = 1000;

export function describeError(err: unknown): string {
  return typeof err === "string" ? err : err instanceof Error ? err.message : String(err);
}

// ---- time formatting ----

export function formatRemaining(ms: number): string {
  if (ms <= 0) return "expired";
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, "0")} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} days`;
}

function formatTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

function jsonText(v: unknown): string {
  if (v === undefined) return "(absent)";
  return JSON.stringify(v);
}

const STATE_WORDS: Record<string, string> = {
  pending: "Waiting for your decision",
  approved: "Approved; sending",
  sending: "Approved; sending",
  retrying: "Approved; sending again",
  outcome_unknown: "Outcome unknown",
  succeeded: "Done",
  failed: "Not done (the Company refused)",
  declined: "Declined",
  expired: "Expired",
  superseded: "Replaced by a newer version",
};

export function stateWords(state: string): string {
  return STATE_WORDS[state] ?? state;
}

// ---- the dialog ----

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
    private readonly backend: ApprovalsBackend,
    opts: ApprovalsOptions = {},
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
      this.expiry.textContent = stateWords(it.state);
      this.expiry.classList.remove("expired");
    }
    const why = this.approveBlocked();
    this.approveBtn.disabled = why !== "";
    this.declineBtn.disabled = !open || this.busy || expired;
    this.approveBtn.hidden = this.declineBtn.hidden = !open;
    this.guardNote.textContent = open && !this.busy ? why || this.hint : "";
    this.checkBtn.hidden = it.state !== "outcome_unknown" || this.busy;
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
    if (this.item?.state === "outcome_unknown") void this.checkOutcome();
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
    const parts: Node[] = [el("p", { class: "result-status", id: "result-status", role: "status" }, out.message || stateWords(out.status))];
    if (out.text) {
      parts.push(
        el("p", { class: "result-label" }, `${it?.companyName ?? "The Company"} said:`),
        el("p", { class: "company-words", id: "result-text" }, out.text),
      );
    }
    if (out.body) {
      parts.push(
        el("p", { class: "result-label" }, `${it?.companyName ?? "The Company"}’s response${out.httpStatus ? ` (HTTP ${out.httpStatus})` : ""}:`),
        el("pre", { class: "company-words", id: "result-body" }, out.body),
      );
    }
    this.result.replaceChildren(...parts);
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
    const doc = this.doc;
    const nodes: Node[] = [];
    nodes.push(
      el(
        "header",
        { class: "approval-head" },
        el("p", { class: "approval-kicker" }, item.decidable ? "Your approval is needed" : stateWords(item.state)),
        el("h2", { id: "approval-title" }, "Approve at ", el("span", { id: "approval-company" }, item.companyName || item.company), "?"),
        el(
          "p",
          { class: "approval-domain" },
          el("span", { id: "approval-domain" }, item.companyDomain),
          " · name and domain verified by Poppydesk (not from the request)",
        ),
      ),
    );
    if (replaced) {
      nodes.push(
        el(
          "p",
          { class: "approval-notice", id: "approval-new-revision", role: "alert" },
          "The Company sent a new version of these terms. Read them again: an approval covers only the version shown now.",
        ),
      );
    }
    const warnings = item.warnings ?? [];
    const summaryWarnings = item.current.summary?.warnings ?? [];
    if (warnings.length + summaryWarnings.length > 0) {
      const ul = el("ul", {});
      for (const w of warnings) ul.appendChild(el("li", {}, w.message));
      for (const w of summaryWarnings) ul.appendChild(el("li", {}, w.message));
      nodes.push(
        el(
          "section",
          { class: "approval-warnings", id: "approval-warnings", role: "alert", "aria-labelledby": "warnings-title" },
          el("h3", { id: "warnings-title" }, "Check these differences before you decide"),
          ul,
        ),
      );
    }
    const changes = item.changes;
    if (changes && (changes.summary_changed || (changes.terms?.length ?? 0) > 0 || changes.expiry_changed)) {
      nodes.push(renderChanges(changes));
    }
    nodes.push(
      el("h3", {}, "What the Company will do"),
      el("div", { id: "approval-summary" }, renderSummary(doc, item.current.summary)),
    );
    const rows = item.current.terms ?? [];
    if (rows.length > 0) {
      const tbody = el("tbody", {});
      for (const r of rows) {
        tbody.appendChild(el("tr", {}, el("th", { scope: "row", class: "mono" }, r.path), el("td", {}, r.value)));
      }
      nodes.push(
        el("h3", {}, "Terms"),
        el("table", { class: "terms", id: "approval-terms" }, el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Term"), el("th", { scope: "col" }, "Value"))), tbody),
      );
    } else {
      nodes.push(el("p", { class: "muted", id: "approval-terms-none" }, "The Company gave no machine-readable terms, so Poppydesk could not check the summary against the request."));
    }
    const facts = el("dl", { class: "facts" });
    append(facts, [
      el("dt", {}, "Account"),
      el("dd", { id: "approval-account" }, item.account ? item.account : "signed out"),
      el("dt", {}, "Session"),
      el("dd", { id: "approval-session", class: "mono" }, item.sid || "unknown"),
      el("dt", {}, "Through"),
      el("dd", {}, item.interface === "mcp" ? "the Company’s MCP server" : item.interface === "api" ? "the Company’s API" : item.interface),
      el("dt", {}, "Operation"),
      el("dd", { class: "mono" }, `${item.current.operationId} · version ${item.current.revision}`),
    ]);
    nodes.push(el("h3", {}, "Who and where"), facts);
    const req = item.request;
    const reqText = req.tool
      ? `Tool ${req.tool}\n${req.arguments || "(no arguments)"}`
      : `${req.method} ${req.url}${req.body ? "\n" + req.body : ""}`;
    nodes.push(el("h3", {}, "What your agent requested"), el("pre", { class: "approval-request", id: "approval-request" }, reqText));
    this.body.replaceChildren(...nodes);
    this.body.scrollTop = 0;
  }
}

function renderChanges(c: Changes): HTMLElement {
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
      const path = t.path === "" ? "(all terms)" : t.path;
      const text =
        t.kind === "added" ? `${path}: added ${jsonText(t.new)}` : t.kind === "removed" ? `${path}: removed (was ${jsonText(t.old)})` : `${path}: ${jsonText(t.old)} → ${jsonText(t.new)}`;
      ul.appendChild(el("li", {}, text));
    }
    sec.appendChild(ul);
  }
  if (c.expiry_changed) {
    sec.appendChild(el("p", {}, `Expiry: ${formatTime(c.old_expires_at ?? "")} → ${formatTime(c.new_expires_at ?? "")}`));
  }
  return sec;
}

// ---- the section ----

// approvalsView returns the view for the Approvals section. It also listens, for the window's
// whole life, for new approvals: one arriving brings the window forward and opens the dialog
// (switching to the Approvals section if needed).
export function approvalsView(backend: ApprovalsBackend, opts: ApprovalsOptions = {}): SectionView {
  let mounted: { refresh: (ev?: ChangedEvent) => void } | null = null;
  let pendingOpen = "";
  let dialog: ApprovalDialog | null = null;

  backend.on(EVENT_APPROVALS_CHANGED, (data) => {
    const ev = (data ?? {}) as ChangedEvent;
    const fresh = ev.kind === "created" || ev.kind === "revision";
    if (fresh) {
      try {
        opts.raise?.();
      } catch (err) {
        console.error("bringing the window forward failed", err);
      }
    }
    if (mounted) {
      mounted.refresh(ev);
    } else if (fresh && ev.id) {
      pendingOpen = ev.id;
      const win = document.defaultView;
      if (win) win.location.hash = "#/approvals";
    }
  });

  return (host: HTMLElement, ctx: ViewContext) => {
    // The empty state at once (replaced when the list has loaded), so the section never flashes
    // blank.
    const listHost = el("div", { class: "approvals-list", id: "approvals-list" }, ctx.empty());
    host.append(listHost);
    if (!dialog) dialog = new ApprovalDialog(document, backend, opts);
    const dlg = dialog;
    let status: ApprovalsStatus = { available: true, problem: "", demo: false, demoCompany: "" };
    let gone = false;

    const openItem = async (id: string) => {
      try {
        const item = await backend.get(id);
        if (gone) return;
        if (dlg.isOpen && dlg.current?.id === id) dlg.update(item);
        else dlg.open(item);
      } catch (err) {
        ctx.setStatus(`Could not open the approval: ${describeError(err)}`);
      }
    };
    dlg.onDecided = () => void load();
    dlg.onClosed = () => void load();

    const load = async (): Promise<ApprovalItem[]> => {
      let items: ApprovalItem[] = [];
      try {
        items = (await backend.list()) ?? [];
      } catch (err) {
        if (!gone) listHost.replaceChildren(el("p", { class: "result-error", role: "alert" }, `Could not read the approvals: ${describeError(err)}`));
        return [];
      }
      if (gone) return items;
      ctx.setBadge("approvals", items.filter((i) => i.decidable).length);
      renderList(items);
      return items;
    };

    const renderList = (items: ApprovalItem[]) => {
      if (items.length === 0) {
        const empty = ctx.empty();
        if (!status.available && status.problem) {
          const p = empty.querySelector(".empty-text");
          if (p) p.textContent = status.problem;
          empty.classList.add("problem");
        }
        const nodes: Node[] = [empty];
        if (status.available && status.demo) nodes.push(demoButtons());
        listHost.replaceChildren(...nodes);
        return;
      }
      const groups: [string, string, ApprovalItem[]][] = [
        ["waiting", "Waiting for you", items.filter((i) => i.decidable)],
        ["unknown", "Outcome unknown", items.filter((i) => i.state === "outcome_unknown")],
        ["earlier", "Earlier", items.filter((i) => !i.decidable && i.state !== "outcome_unknown")],
      ];
      const nodes: Node[] = [];
      for (const [key, title, list] of groups) {
        if (list.length === 0) continue;
        const ul = el("ul", { class: "approval-rows" });
        for (const it of list) {
          const open = el(
            "button",
            { type: "button", class: "approval-row", "data-id": it.id, id: `approval-row-${it.id}` },
            el("span", { class: "row-company" }, it.companyName || it.company),
            el("span", { class: "row-summary" }, it.current.summaryText),
            el("span", { class: "row-state" }, `${stateWords(it.state)} · ${formatTime(it.updated)}`),
          );
          open.addEventListener("click", () => void openItem(it.id));
          const li = el("li", {}, open);
          if (it.state === "outcome_unknown") {
            const check = el("button", { type: "button", class: "btn", "data-check": it.id }, "Check the outcome");
            check.addEventListener("click", () => {
              void openItem(it.id).then(() => dlg.checkNow());
            });
            li.appendChild(check);
          }
          ul.appendChild(li);
        }
        nodes.push(el("section", { class: `approval-group group-${key}`, "aria-label": title }, el("h2", { class: "group-title" }, title), ul));
      }
      if (status.demo) nodes.push(demoButtons());
      listHost.replaceChildren(...nodes);
    };

    const demoButtons = (): HTMLElement => {
      const note = el("p", { class: "muted", id: "demo-note", "aria-live": "polite" });
      const mk = (kind: string, label: string) => {
        const b = el("button", { type: "button", class: "btn", id: `demo-${kind}` }, label);
        b.addEventListener("click", () => {
          b.disabled = true;
          note.textContent = "Asking the reference Company for the exchange…";
          backend.startDemoExchange(kind).then(
            (msg) => {
              note.textContent = msg;
              b.disabled = false;
            },
            (err) => {
              note.textContent = `The demo request failed: ${describeError(err)}`;
              b.disabled = false;
            },
          );
        });
        return b;
      };
      const runAgent = el("button", { type: "button", class: "btn", id: "demo-agent" }, "Run the example agent");
      runAgent.disabled = agentRun.running;
      runAgent.addEventListener("click", () => {
        runAgent.disabled = true;
        agentRun = { running: true, lines: [], error: "" };
        renderAgent();
        backend.runExampleAgent().then(
          () => undefined,
          (err) => {
            agentRun = { running: false, lines: agentRun.lines, error: `The example agent could not start: ${describeError(err)}` };
            renderAgent();
          },
        );
      });
      agentButton = runAgent;
      return el(
        "section",
        { class: "card demo-card", "aria-labelledby": "demo-title" },
        el("h2", { id: "demo-title" }, `Demo: ${status.demoCompany || "the reference Company"}`),
        el("p", { class: "muted" }, "Ask the reference Company to exchange the Stormline Jacket (M) for the insulated one, as your agent would. The Company answers that it needs your approval, and the dialog opens."),
        el("div", { class: "approval-actions" }, mk("api", "Request the jacket exchange (API)"), mk("mcp", "Request the jacket exchange (MCP)")),
        note,
        el("p", { class: "muted" }, "Or run the example agent: a small scripted program (no AI) that talks to Poppydesk only through the model interface (MCP), as your own agent would. It can ask, never approve; you decide in the dialog."),
        el("div", { class: "approval-actions" }, runAgent),
        agentHost,
      );
    };

    // The example agent's transcript: its own words, kept across re-renders of the card.
    let agentRun: ExampleAgentRun = { running: false, lines: [], error: "" };
    let agentButton: HTMLButtonElement | null = null;
    const agentHost = el("div", { class: "agent-transcript", id: "agent-transcript", "aria-live": "polite" });
    const renderAgent = () => {
      if (agentButton) agentButton.disabled = agentRun.running;
      if (!agentRun.running && agentRun.lines.length === 0 && !agentRun.error) {
        agentHost.replaceChildren();
        return;
      }
      const words = el("ol", { class: "si-model-quote agent-lines", id: "agent-lines" });
      for (const line of agentRun.lines) words.appendChild(el("li", {}, line));
      const box = el("div", { class: "si-model", role: "note" });
      append(box, [
        el("p", { class: "si-model-label" }, "The example agent says:"),
        words,
        el("p", { class: "si-model-note" }, "These are the agent’s words, not Poppydesk’s. It cannot approve anything; only your Approve in the dialog does."),
      ]);
      const nodes: Node[] = [box, el("p", { class: "muted", id: "agent-state" }, agentRun.running ? "The example agent is running…" : "The example agent has finished.")];
      if (agentRun.error) nodes.push(el("p", { class: "result-error", role: "alert", id: "agent-error" }, agentRun.error));
      agentHost.replaceChildren(...nodes);
    };
    const offAgent = backend.on(EVENT_EXAMPLE_AGENT, (data) => {
      const r = (data ?? {}) as Partial<ExampleAgentRun>;
      agentRun = { running: !!r.running, lines: Array.isArray(r.lines) ? r.lines.map(String) : [], error: r.error ? String(r.error) : "" };
      if (!gone) renderAgent();
    });

    mounted = {
      refresh: (ev?: ChangedEvent) => {
        void load().then(() => {
          if (!ev || !ev.id || gone) return;
          const fresh = ev.kind === "created" || ev.kind === "revision";
          if (dlg.isOpen && dlg.current?.id === ev.id) void openItem(ev.id);
          else if (fresh && !dlg.isOpen) void openItem(ev.id);
          else if (fresh) ctx.setStatus("Another approval arrived; it is in the Approvals list.");
        });
      },
    };

    void backend.status().then(
      (s) => {
        status = s;
        if (!s.available && s.problem) ctx.setStatus(s.problem);
        if (s.demo) {
          void backend.exampleAgent().then(
            (r) => {
              if (gone || !r) return;
              agentRun = { running: !!r.running, lines: r.lines ?? [], error: r.error ?? "" };
              renderAgent();
            },
            () => undefined,
          );
        }
        return load();
      },
      (err) => {
        ctx.setStatus(`Approvals are unavailable: ${describeError(err)}`);
        return load();
      },
    ).then(() => {
      if (pendingOpen && !gone) {
        const id = pendingOpen;
        pendingOpen = "";
        void openItem(id);
      }
    });

    return () => {
      gone = true;
      mounted = null;
      offAgent();
      dlg.close();
    };
  };
}

// ---- the Go service ----

interface WindowRuntime {
  EventsOnMultiple(name: string, cb: (...data: unknown[]) => void, max: number): (() => void) | void;
  WindowShow?: () => void;
  WindowUnminimise?: () => void;
}

function runtime(): WindowRuntime | undefined {
  return (window as unknown as { runtime?: WindowRuntime }).runtime;
}

// goApprovals calls app.Approvals through the generated Wails bindings (the same in the
// browser-testable bridge). The generated classes carry the same fields as the interfaces above.
// A window built without the service (an older core, or a test page binding only the shell)
// shows the plain empty state.
function bound(): boolean {
  const go = (window as unknown as { go?: { app?: { Approvals?: unknown } } }).go;
  return !!go?.app?.Approvals;
}

function approvalsService(): Record<string, (...args: unknown[]) => Promise<unknown>> {
  const go = (window as unknown as { go?: { app?: { Approvals?: Record<string, (...args: unknown[]) => Promise<unknown>> } } }).go;
  const svc = go?.app?.Approvals;
  if (!svc) throw new Error("the approvals service is not bound to this window");
  return svc;
}

export const goApprovals: ApprovalsBackend = {
  status: () =>
    bound() ? (Go.Status() as unknown as Promise<ApprovalsStatus>) : Promise.resolve({ available: false, problem: "", demo: false, demoCompany: "" }),
  list: () => (bound() ? (Go.List() as unknown as Promise<ApprovalItem[] | null>) : Promise.resolve([])),
  get: (id) => Go.Get(id) as unknown as Promise<ApprovalItem>,
  approve: (id, revision, digest) => Go.Approve(id, revision, digest) as unknown as Promise<Outcome>,
  decline: (id, revision) => Go.Decline(id, revision),
  checkOutcome: (id) => Go.CheckOutcome(id) as unknown as Promise<Outcome>,
  startDemoExchange: (kind) => Go.StartDemoExchange(kind),
  // The example agent's two methods are called on the bound service directly (what the
  // generated bindings do), so this view does not depend on regenerated bindings for them.
  runExampleAgent: async () => {
    await approvalsService().RunExampleAgent();
  },
  exampleAgent: async () => (await approvalsService().ExampleAgent()) as ExampleAgentRun,
  on(event, cb) {
    const off = runtime()?.EventsOnMultiple(event, cb, -1);
    return typeof off === "function" ? off : () => {};
  },
};

// raiseWindow brings the desktop window forward (Wails runtime); the browser-testable bridge
// has no such functions, so it does nothing there.
export function raiseWindow(): void {
  const rt = runtime();
  rt?.WindowUnminimise?.();
  rt?.WindowShow?.();
}
