// The Conversations section (issue 8; spec 8.3–8.12, 10.1; Operations 4 "Conversations").
//
// Per Company: the list of conversations, a start box, and the open conversation's transcript
// with who wrote each message ("Your agent" for the model, "You" for the user's own words, the
// Company's agent, or a named person at the Company with their picture), text-delta pieces shown
// live as they arrive and replaced by the full message (spec 8.6), the status and responder in
// plain words (8.7), Hand off (8.9) and Close (8.12) buttons, the Company's request to talk with
// the user with Accept / Decline (8.10: Accept is the ONLY way a Direct Conversation is accepted),
// and a composer where the user types their own words (author.type "human", 8.8).
//
// Everything from the Company is set with textContent (dom.ts): never HTML. The Go service has
// already made invisible and direction-changing characters visible (operations.Visible), and
// passes pictures only as data: URLs (the CSP forbids remote loads); anything else is a
// placeholder with the person's initial.
//
// Long conversations (10,000 events) are a virtualized list: only the rows in and near the
// visible window are in the DOM, positioned by measured heights (estimated until measured).

import { el } from "../dom";
import type { SectionView, ViewContext } from "../app";

// ---- the JSON of the Go service app.Conversations (app/conversations.go) ----

export interface ConvAuthor {
  kind: string; // "model" | "user" | "company-agent" | "company-person"
  name: string;
  picture: string;
}
export interface ConvEntry {
  eventId: string;
  type: string;
  at: string;
  messageId: string;
  author?: ConvAuthor | null;
  text: string;
  data: string;
  operation: string;
  revision: string;
  status: string;
  responder: string;
  rawStatus: string;
  rawResponder: string;
  scope: string;
  reason: string;
  conversationId: string;
}
export interface ConvInvite {
  eventId: string;
  reason: string;
  at: string;
}
export interface ConvWriting {
  messageId: string;
  text: string;
}
export interface ConvState {
  company: string;
  id: string;
  title: string;
  account: string;
  parent: string;
  direct: boolean;
  status: string;
  responder: string;
  rawStatus: string;
  rawResponder: string;
  pending: number;
  authScopes: string[] | null;
  invites: ConvInvite[] | null;
  directOpen: string;
  writing: ConvWriting[] | null;
  total: number;
  updated: string;
}
export interface ConvPage {
  from: number;
  entries: ConvEntry[] | null;
  total: number;
}
export interface ConvCompany {
  identifier: string;
  name: string;
}
export interface ConvChange {
  kind: string;
  company: string;
  conversationId: string;
  messageId?: string;
  text?: string;
}
export interface ConvStatus {
  available: boolean;
  problem: string;
}

export const EVENT_CONVERSATIONS = "conversations:changed";

export interface ConversationsBackend {
  status(): Promise<ConvStatus>;
  companies(): Promise<ConvCompany[] | null>;
  list(company: string): Promise<ConvState[] | null>;
  open(company: string, id: string): Promise<ConvState>;
  state(company: string, id: string): Promise<ConvState>;
  entries(company: string, id: string, from: number, limit: number): Promise<ConvPage>;
  start(company: string, text: string): Promise<ConvState>;
  send(company: string, id: string, text: string): Promise<ConvState>;
  handoff(company: string, id: string): Promise<ConvState>;
  close(company: string, id: string): Promise<ConvState>;
  accept(company: string, parentId: string, eventId: string): Promise<ConvState>;
  decline(company: string, parentId: string, eventId: string): Promise<ConvState>;
  on(event: string, cb: (...data: unknown[]) => void): () => void;
}

interface GoConversations {
  Status(): Promise<ConvStatus>;
  Companies(): Promise<ConvCompany[] | null>;
  List(company: string): Promise<ConvState[] | null>;
  Open(company: string, id: string): Promise<ConvState>;
  State(company: string, id: string): Promise<ConvState>;
  Entries(company: string, id: string, from: number, limit: number): Promise<ConvPage>;
  Start(company: string, text: string): Promise<ConvState>;
  Send(company: string, id: string, text: string): Promise<ConvState>;
  Handoff(company: string, id: string): Promise<ConvState>;
  Close(company: string, id: string): Promise<ConvState>;
  AcceptUserRequest(company: string, parentId: string, eventId: string): Promise<ConvState>;
  DeclineUserRequest(company: string, parentId: string, eventId: string): Promise<ConvState>;
}

function goService(): GoConversations {
  const svc = (window as unknown as { go?: { app?: { Conversations?: GoConversations } } }).go?.app?.Conversations;
  if (!svc) throw new Error("the Conversations service is not bound in this window");
  return svc;
}

const via = <T>(f: (s: GoConversations) => Promise<T>): Promise<T> => Promise.resolve().then(() => f(goService()));

export const goConversations: ConversationsBackend = {
  status: () => via((s) => s.Status()),
  companies: () => via((s) => s.Companies()),
  list: (c) => via((s) => s.List(c)),
  open: (c, id) => via((s) => s.Open(c, id)),
  state: (c, id) => via((s) => s.State(c, id)),
  entries: (c, id, from, limit) => via((s) => s.Entries(c, id, from, limit)),
  start: (c, text) => via((s) => s.Start(c, text)),
  send: (c, id, text) => via((s) => s.Send(c, id, text)),
  handoff: (c, id) => via((s) => s.Handoff(c, id)),
  close: (c, id) => via((s) => s.Close(c, id)),
  accept: (c, p, e) => via((s) => s.AcceptUserRequest(c, p, e)),
  decline: (c, p, e) => via((s) => s.DeclineUserRequest(c, p, e)),
  on(event, cb) {
    const off = window.runtime?.EventsOnMultiple(event, cb, -1);
    return typeof off === "function" ? off : () => {};
  },
};

// ---- words ----

// authorLabel says who wrote a message.
export function authorLabel(a: ConvAuthor | null | undefined, companyName: string): string {
  const co = companyName || "the Company";
  switch (a?.kind) {
    case "model":
      return "Your agent";
    case "user":
      return "You";
    case "company-agent":
      return `${co}’s agent`;
    case "company-person":
      return a.name ? `${a.name} (a person at ${co})` : `A person at ${co}`;
    default:
      return co;
  }
}

// statusWords says the status in plain words (spec 8.7; unknown values arrive as "working").
export function statusWords(status: string): string {
  switch (status) {
    case "idle":
      return "waiting for your reply";
    case "queued":
      return "queued for a person";
    case "closed":
      return "closed";
    default:
      return "working";
  }
}

// responderWords says who handles the conversation (spec 8.7; unknown arrives as "human").
export function responderWords(responder: string, companyName: string): string {
  return responder === "agent" ? `${companyName || "the Company"}’s agent is handling this` : "a person is handling this";
}

export function stateLine(s: Pick<ConvState, "status" | "responder">, companyName: string): string {
  if (s.status === "closed") return "Closed";
  const st = statusWords(s.status);
  return `${st.charAt(0).toUpperCase()}${st.slice(1)} · ${responderWords(s.responder, companyName)}`;
}

export const APPROVAL_LINE = "The Company asked for your approval — see Approvals";

// ---- rows ----

export interface Row {
  key: string;
  kind: "message" | "writing" | "note" | "approval";
  author?: ConvAuthor;
  label: string;
  text: string;
  data?: string;
  picture?: string;
  initial?: string;
}

function initialOf(name: string): string {
  const ch = Array.from(name.trim())[0];
  return ch ? ch.toUpperCase() : "?";
}

// rowsOfEntry turns one entry into its transcript rows.
export function rowsOfEntry(e: ConvEntry, companyName: string): Row[] {
  const co = companyName || "the Company";
  switch (e.type) {
    case "message": {
      const label = authorLabel(e.author, companyName);
      const a = e.author ?? { kind: "company-agent", name: "", picture: "" };
      const row: Row = { key: e.eventId, kind: "message", author: a, label, text: e.text, data: e.data || undefined };
      if (a.kind === "company-person") {
        row.picture = a.picture || undefined;
        row.initial = initialOf(a.name || co);
      }
      const out = [row];
      if (e.operation) out.push({ key: `${e.eventId}#op`, kind: "approval", label: "", text: APPROVAL_LINE });
      return out;
    }
    case "state": {
      const raw = e.rawStatus || e.rawResponder ? ` (the Company said “${[e.rawStatus, e.rawResponder].filter(Boolean).join(", ")}”)` : "";
      return [{ key: e.eventId, kind: "note", label: "", text: `${stateLine(e, companyName)}${raw}` }];
    }
    case "authorization":
      return [{ key: e.eventId, kind: "note", label: "", text: `${co} needs you to sign in${e.scope ? ` (${e.scope})` : ""} to continue — see Sign-in` }];
    case "user_requested":
      return [{ key: e.eventId, kind: "note", label: "", text: `${co} asks to talk with you directly${e.reason ? `: ${e.reason}` : ""}` }];
    case "direct_opened":
      return [{ key: e.eventId, kind: "note", label: "", text: "You opened a Direct Conversation with the Company" }];
    case "direct_closed":
      return [{ key: e.eventId, kind: "note", label: "", text: "The Direct Conversation was closed" }];
    default:
      return [];
  }
}

// Transcript holds a conversation's entries and the messages being written. Pieces of a message
// (text-delta) are shown until the full message arrives and replaces them (spec 8.6).
export class Transcript {
  entries: ConvEntry[] = [];
  writing = new Map<string, string>();
  private done = new Set<string>();
  private base: Row[] = [];
  constructor(public companyName: string) {}

  add(entries: ConvEntry[]): void {
    for (const e of entries) {
      this.entries.push(e);
      if (e.messageId) {
        this.done.add(e.messageId);
        this.writing.delete(e.messageId);
      }
      for (const r of rowsOfEntry(e, this.companyName)) this.base.push(r);
    }
  }
  // delta records the text so far of a message being written; a message already received in
  // full is not written again.
  delta(messageId: string, text: string): boolean {
    if (!messageId || this.done.has(messageId)) return false;
    this.writing.set(messageId, text);
    return true;
  }
  dropDeltas(): void {
    this.writing.clear();
  }
  rows(): Row[] {
    if (this.writing.size === 0) return this.base;
    const out = this.base.slice();
    const co = this.companyName || "The Company";
    for (const [id, text] of this.writing) {
      out.push({ key: `writing:${id}`, kind: "writing", label: `${co} is writing…`, text });
    }
    return out;
  }
}

// ---- the virtualized list ----

export interface VirtualOptions {
  estimate?: number; // px per row until measured
  overscan?: number; // px rendered above and below the viewport
  viewport?: number; // px when the scroller has no layout (jsdom)
}

// VirtualList renders only the rows in and near the visible part of scroller.
export class VirtualList {
  rows: Row[] = [];
  private heights = new Map<string, number>();
  private offsets: number[] = [0];
  private dirty = true;
  private spacer: HTMLElement;
  private win: HTMLElement;
  private first = 0;
  private last = -1;
  private readonly estimate: number;
  private readonly overscan: number;
  private readonly fallback: number;

  constructor(
    private scroller: HTMLElement,
    private draw: (r: Row) => HTMLElement,
    o: VirtualOptions = {},
  ) {
    this.estimate = o.estimate ?? 64;
    this.overscan = o.overscan ?? 400;
    this.fallback = o.viewport ?? 600;
    this.spacer = el("div", { class: "conv-spacer" });
    this.win = el("div", { class: "conv-window", role: "list" });
    this.spacer.appendChild(this.win);
    scroller.replaceChildren(this.spacer);
    scroller.addEventListener("scroll", () => this.render(), { passive: true });
  }

  private height(i: number): number {
    return this.heights.get(this.rows[i].key) ?? this.estimate;
  }
  private layout(): void {
    if (!this.dirty) return;
    const n = this.rows.length;
    const off = new Array<number>(n + 1);
    off[0] = 0;
    for (let i = 0; i < n; i++) off[i + 1] = off[i] + this.height(i);
    this.offsets = off;
    this.dirty = false;
    this.spacer.style.height = `${off[n]}px`;
  }
  // indexAt returns the row at pixel y (binary search of the offsets).
  private indexAt(y: number): number {
    let lo = 0;
    let hi = this.rows.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.offsets[mid] <= y) lo = mid;
      else hi = mid - 1;
    }
    return Math.max(0, lo);
  }
  atBottom(): boolean {
    const h = this.scroller.clientHeight || this.fallback;
    return this.scroller.scrollTop + h >= this.scroller.scrollHeight - 24;
  }
  setRows(rows: Row[], stick: boolean): void {
    this.rows = rows;
    this.dirty = true;
    this.render();
    if (stick) this.toBottom();
  }
  toBottom(): void {
    this.layout();
    this.scroller.scrollTop = this.offsets[this.rows.length];
    this.render();
  }
  rendered(): number {
    return this.win.childElementCount;
  }
  render(): void {
    this.layout();
    const n = this.rows.length;
    if (n === 0) {
      this.win.replaceChildren();
      this.first = 0;
      this.last = -1;
      return;
    }
    const h = this.scroller.clientHeight || this.fallback;
    const top = this.scroller.scrollTop;
    const first = this.indexAt(Math.max(0, top - this.overscan));
    const last = this.indexAt(top + h + this.overscan);
    this.first = first;
    this.last = last;
    const nodes: HTMLElement[] = [];
    for (let i = first; i <= last; i++) {
      const node = this.draw(this.rows[i]);
      node.dataset.row = String(i);
      node.setAttribute("role", "listitem");
      nodes.push(node);
    }
    this.win.replaceChildren(...nodes);
    this.win.style.transform = `translateY(${this.offsets[first]}px)`;
    // Measure what was drawn; rows above the first visible row that changed height move the
    // scroll position by the same amount, so what the user reads stays in place.
    const anchor = this.indexAt(top);
    let shift = 0;
    let changed = false;
    for (let k = 0; k < nodes.length; k++) {
      const hh = nodes[k].offsetHeight;
      if (hh <= 0) continue;
      const i = first + k;
      const old = this.height(i);
      if (Math.abs(old - hh) > 0.5) {
        this.heights.set(this.rows[i].key, hh);
        changed = true;
        if (i < anchor) shift += hh - old;
      }
    }
    if (changed) {
      this.dirty = true;
      this.layout();
      this.win.style.transform = `translateY(${this.offsets[first]}px)`;
      if (shift !== 0) this.scroller.scrollTop = top + shift;
    }
  }
  range(): [number, number] {
    return [this.first, this.last];
  }
}

// ---- drawing ----

function drawRow(r: Row, onApprovals: () => void): HTMLElement {
  if (r.kind === "note") return el("div", { class: "conv-row conv-note" }, r.text);
  if (r.kind === "approval") {
    const b = el("button", { type: "button", class: "conv-link" }, "Open Approvals");
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

function describe(err: unknown): string {
  return typeof err === "string" ? err : err instanceof Error ? err.message : String(err);
}

export interface ConversationsOptions {
  // requireTrusted makes Accept ignore clicks no user made (synthetic events). Tests in jsdom
  // turn it off; the window keeps it on.
  requireTrusted?: boolean;
  virtual?: VirtualOptions;
  pageSize?: number;
}

// ---- the view ----

export function conversationsView(backend: ConversationsBackend, opts: ConversationsOptions = {}): SectionView {
  const requireTrusted = opts.requireTrusted ?? true;
  const pageSize = opts.pageSize ?? 2000;
  return (host: HTMLElement, ctx: ViewContext) => {
    let companies: ConvCompany[] = [];
    let company = "";
    let openId = "";
    let state: ConvState | null = null;
    let transcript = new Transcript("");
    let alive = true;

    const problem = el("p", { class: "conv-problem", id: "conv-problem", role: "alert", hidden: true });
    const select = el("select", { id: "conv-company", class: "conv-company", "aria-label": "Company" });
    const list = el("ul", { id: "conv-list", class: "conv-list", "aria-label": "Conversations" });
    const startText = el("textarea", { id: "conv-start-text", class: "conv-input", rows: 2, placeholder: "Write the first message…", "aria-label": "First message" });
    const startBtn = el("button", { type: "button", id: "conv-start", class: "btn-primary" }, "Start conversation");
    const side = el(
      "aside",
      { class: "conv-side" },
      el("label", { for: "conv-company", class: "conv-label" }, "Company"),
      select,
      el("h2", { class: "conv-side-title" }, "Conversations"),
      list,
      el("div", { class: "conv-start" }, el("label", { for: "conv-start-text", class: "conv-label" }, "Start a new conversation"), startText, startBtn),
    );

    const title = el("h2", { id: "conv-title", class: "conv-title" }, "");
    const kindLine = el("p", { id: "conv-kind", class: "conv-kind" });
    const status = el("p", { id: "conv-status", class: "conv-status", "aria-live": "polite" });
    const handoff = el("button", { type: "button", id: "conv-handoff" }, "Hand off to a person");
    const close = el("button", { type: "button", id: "conv-close" }, "Close conversation");
    const invite = el("div", { id: "conv-invite", class: "conv-invite", role: "region", "aria-label": "The Company asks to talk with you", hidden: true });
    const notice = el("div", { id: "conv-notice", class: "conv-notice", hidden: true });
    const scroller = el("div", { id: "conv-scroll", class: "conv-scroll", tabindex: 0, "aria-label": "Transcript" });
    const input = el("textarea", { id: "conv-input", class: "conv-input", rows: 2, "aria-label": "Your message" });
    const send = el("button", { type: "button", id: "conv-send", class: "btn-primary" }, "Send");
    const composer = el("div", { class: "conv-composer" }, input, send);
    const head = el("header", { class: "conv-head" }, el("div", { class: "conv-head-text" }, title, kindLine, status), el("div", { class: "conv-actions" }, handoff, close));
    const pane = el("section", { class: "conv-pane", id: "conv-pane", "aria-labelledby": "conv-title", hidden: true }, head, invite, notice, scroller, composer);
    const placeholder = el("div", { class: "conv-placeholder", id: "conv-placeholder" });
    const main = el("div", { class: "conv-main" }, pane, placeholder);
    host.replaceChildren(problem, el("div", { class: "conv-layout" }, side, main));

    const vlist = new VirtualList(scroller, (r) => drawRow(r, () => ctx.show("approvals")), opts.virtual);

    const companyName = (id: string) => companies.find((c) => c.identifier === id)?.name ?? id;
    const fail = (what: string) => (err: unknown) => {
      problem.textContent = `${what}: ${describe(err)}`;
      problem.hidden = false;
    };
    const ok = () => {
      problem.hidden = true;
      problem.textContent = "";
    };

    // ---- the conversation list ----
    let listBusy = false;
    let listAgain = false;
    async function refreshList(): Promise<void> {
      if (!company) return;
      if (listBusy) {
        listAgain = true;
        return;
      }
      listBusy = true;
      try {
        const items = (await backend.list(company)) ?? [];
        if (!alive) return;
        const co = companyName(company);
        list.replaceChildren(
          ...items.map((c) => {
            const b = el(
              "button",
              { type: "button", class: "conv-item", "data-id": c.id, "aria-current": c.id === openId ? "true" : undefined },
              el("span", { class: "conv-item-title" }, c.direct ? `Direct: ${c.title || "you and the Company"}` : c.title || c.id),
              el("span", { class: "conv-item-status" }, stateLine(c, co)),
            );
            b.addEventListener("click", () => openConversation(c.id));
            return el("li", {}, b);
          }),
        );
        if (items.length === 0) list.replaceChildren(el("li", { class: "conv-none" }, "No conversations with this Company yet."));
      } catch (err) {
        fail("Could not read the conversations")(err);
      } finally {
        listBusy = false;
        if (listAgain) {
          listAgain = false;
          void refreshList();
        }
      }
    }

    // ---- the open conversation ----
    function renderState(): void {
      if (!state) return;
      const co = companyName(state.company);
      title.textContent = state.direct ? `Direct Conversation with ${co}` : state.title || "Conversation";
      kindLine.textContent = state.direct
        ? `You talk with ${co} yourself here: what you type is sent as your own words.`
        : `Your agent talks with ${co} here; you can write too, as yourself.`;
      status.textContent = stateLine(state, co) + (state.rawStatus || state.rawResponder ? ` (the Company said “${[state.rawStatus, state.rawResponder].filter(Boolean).join(", ")}”)` : "");
      status.dataset.status = state.status;
      status.dataset.responder = state.responder;
      const closed = state.status === "closed";
      handoff.disabled = closed || state.status === "queued" || state.responder !== "agent" || !!state.directOpen;
      close.disabled = closed;
      input.disabled = closed || !!state.directOpen;
      send.disabled = closed || !!state.directOpen;
      input.placeholder = closed ? "This conversation is closed." : `Write to ${co}…`;
      // The Company's request to talk with the user (spec 8.10).
      const inv = (state.invites ?? [])[0];
      if (inv && !closed) {
        const accept = el("button", { type: "button", id: "conv-accept", class: "btn-primary" }, "Accept");
        const decline = el("button", { type: "button", id: "conv-decline" }, "Decline");
        const parent = state.id;
        accept.addEventListener("click", (ev) => {
          if (requireTrusted && !ev.isTrusted) return;
          accept.disabled = decline.disabled = true;
          backend.accept(state?.company ?? company, parent, inv.eventId).then((d) => {
            ok();
            void openConversation(d.id);
            void refreshList();
          }, fail("Could not accept"));
        });
        decline.addEventListener("click", () => {
          accept.disabled = decline.disabled = true;
          backend.decline(state?.company ?? company, parent, inv.eventId).then((s) => {
            ok();
            applyState(s);
          }, fail("Could not decline"));
        });
        invite.replaceChildren(
          el(
            "div",
            {},
            el("p", { class: "conv-invite-text" }, `${co} asks to talk with you directly.`),
            inv.reason ? el("p", { class: "conv-invite-reason", id: "conv-invite-reason" }, inv.reason) : null,
            el("p", { class: "conv-invite-help" }, "Accept opens a Direct Conversation where you type and read yourself. Nothing is accepted unless you choose Accept."),
            el("div", { class: "conv-invite-actions" }, accept, decline),
          ),
        );
        invite.hidden = false;
      } else {
        invite.hidden = true;
        invite.replaceChildren();
      }
      const notes: HTMLElement[] = [];
      if (state.authScopes && state.authScopes.length > 0) {
        const b = el("button", { type: "button", class: "conv-link" }, "Open Sign-in");
        b.addEventListener("click", () => ctx.show("signin"));
        notes.push(el("p", {}, `${co} needs you to sign in (${state.authScopes.join(" ")}) to continue this conversation. `, b));
      }
      if (state.directOpen) {
        const id = state.directOpen;
        const b = el("button", { type: "button", class: "conv-link", id: "conv-open-direct" }, "Open it");
        b.addEventListener("click", () => void openConversation(id));
        notes.push(el("p", {}, "A Direct Conversation with the Company is open; this conversation waits until it closes. ", b));
      }
      if (state.parent) {
        const id = state.parent;
        const b = el("button", { type: "button", class: "conv-link" }, "Back to the conversation");
        b.addEventListener("click", () => void openConversation(id));
        notes.push(el("p", {}, "This Direct Conversation belongs to another conversation. ", b));
      }
      if (state.pending > 0) notes.push(el("p", {}, `${state.pending} message(s) not yet accepted by the Company; Poppydesk sends them again with the same ID.`));
      notice.replaceChildren(...notes);
      notice.hidden = notes.length === 0;
    }

    function applyState(s: ConvState): void {
      if (s.id !== openId) return;
      state = s;
      for (const w of s.writing ?? []) transcript.delta(w.messageId, w.text);
      renderState();
    }

    let loadBusy = false;
    let loadAgain = false;
    // load reads the state and the entries not yet shown.
    async function load(): Promise<void> {
      if (!openId) return;
      if (loadBusy) {
        loadAgain = true;
        return;
      }
      loadBusy = true;
      const id = openId;
      try {
        const s = await backend.state(company, id);
        if (!alive || id !== openId) return;
        let added = false;
        while (transcript.entries.length < s.total) {
          const page = await backend.entries(company, id, transcript.entries.length, pageSize);
          if (!alive || id !== openId) return;
          const es = page.entries ?? [];
          if (es.length === 0) break;
          transcript.add(es);
          added = true;
        }
        applyState(s);
        if (added || (s.writing ?? []).length > 0) vlist.setRows(transcript.rows(), vlist.atBottom());
      } catch (err) {
        fail("Could not read the conversation")(err);
      } finally {
        loadBusy = false;
        if (loadAgain) {
          loadAgain = false;
          void load();
        }
      }
    }

    async function openConversation(id: string): Promise<void> {
      openId = id;
      state = null;
      transcript = new Transcript(companyName(company));
      vlist.setRows([], false);
      pane.hidden = false;
      placeholder.hidden = true;
      try {
        const s = await backend.open(company, id);
        if (!alive || id !== openId) return;
        state = s;
        renderState();
        await load();
        vlist.toBottom();
        void refreshList();
      } catch (err) {
        fail("Could not open the conversation")(err);
      }
    }

    function showPlaceholder(text: string): void {
      pane.hidden = true;
      placeholder.hidden = false;
      placeholder.replaceChildren(el("p", {}, text));
    }

    // ---- actions ----
    startBtn.addEventListener("click", () => {
      const text = startText.value;
      if (!company || !text.trim()) return;
      startBtn.disabled = true;
      backend.start(company, text).then(
        (s) => {
          ok();
          startText.value = "";
          startBtn.disabled = false;
          void openConversation(s.id);
          void refreshList();
        },
        (err) => {
          startBtn.disabled = false;
          fail("Could not start the conversation")(err);
        },
      );
    });
    const doSend = () => {
      const text = input.value;
      if (!openId || !text.trim()) return;
      const id = openId;
      send.disabled = true;
      backend.send(company, id, text).then(
        (s) => {
          ok();
          input.value = "";
          send.disabled = false;
          applyState(s);
          void load();
        },
        (err) => {
          send.disabled = false;
          fail("Could not send the message")(err);
        },
      );
    };
    send.addEventListener("click", doSend);
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        doSend();
      }
    });
    handoff.addEventListener("click", () => {
      if (!openId) return;
      handoff.disabled = true;
      backend.handoff(company, openId).then((s) => {
        ok();
        applyState(s);
        void load();
      }, fail("Could not hand off"));
    });
    close.addEventListener("click", () => {
      if (!openId) return;
      close.disabled = true;
      backend.close(company, openId).then((s) => {
        ok();
        applyState(s);
        void refreshList();
      }, fail("Could not close the conversation"));
    });
    select.addEventListener("change", () => {
      company = select.value;
      openId = "";
      showPlaceholder("Choose a conversation, or start one.");
      void refreshList();
    });

    // ---- live changes ----
    let listTimer: ReturnType<typeof setTimeout> | undefined;
    const off = backend.on(EVENT_CONVERSATIONS, (raw) => {
      const ch = raw as ConvChange | undefined;
      if (!ch || ch.company !== company) return;
      if (ch.conversationId === openId) {
        if (ch.kind === "delta") {
          if (transcript.delta(ch.messageId ?? "", ch.text ?? "")) vlist.setRows(transcript.rows(), vlist.atBottom());
          return;
        }
        if (ch.kind === "drop_deltas") {
          transcript.dropDeltas();
          vlist.setRows(transcript.rows(), vlist.atBottom());
          return;
        }
        void load();
      }
      if (ch.kind === "delta") return;
      if (listTimer === undefined) {
        listTimer = setTimeout(() => {
          listTimer = undefined;
          void refreshList();
        }, 150);
      }
    });

    // ---- start ----
    showPlaceholder("Loading…");
    Promise.all([backend.status(), backend.companies()]).then(
      ([st, cos]) => {
        if (!alive) return;
        companies = cos ?? [];
        select.replaceChildren(...companies.map((c) => el("option", { value: c.identifier }, c.name)));
        if (!st.available || companies.length === 0) {
          // Nothing to talk with (yet): the section's empty state, and why when Go said.
          problem.textContent = st.available ? "" : st.problem;
          problem.hidden = st.available;
          host.replaceChildren(problem, ctx.empty());
          return;
        }
        company = companies[0].identifier;
        select.value = company;
        showPlaceholder("Choose a conversation, or start one.");
        void refreshList();
      },
      () => {
        // The service is not bound in this window (for example a build without the engine).
        if (alive) host.replaceChildren(ctx.empty());
      },
    );

    return () => {
      alive = false;
      off();
      if (listTimer !== undefined) clearTimeout(listTimer);
    };
  };
}
