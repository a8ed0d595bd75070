// Test fixtures of the Conversations section: entries and states as fronts.Conversations sends
// them, a fake fronts.Conversations, and mounting the view.

import { type ConversationChange, type ConversationEntry, type ConversationState, EVENTS } from "../../api";
import { FakeEvents } from "../../api/testing";
import type { ViewContext } from "../../app";
import { conversationsView, type ConversationsBackend } from "./view";

export const CO = "https://auth.shop.localhost:8443";

export function entry(i: number, over: Partial<ConversationEntry> = {}): ConversationEntry {
  return {
    eventId: `evt_${i}`, type: "message", at: "", messageId: `msg_${i}`, author: { kind: "company-agent", name: "", picture: "" },
    text: `Message ${i}`, data: "", operation: "", revision: "", status: "", responder: "", rawStatus: "", rawResponder: "",
    scope: "", reason: "", conversationId: "", ...over,
  };
}

export function conv(over: Partial<ConversationState> = {}): ConversationState {
  return {
    company: CO, id: "cnv_1", title: "Which jacket is warmer?", account: "", parent: "", direct: false, status: "idle", responder: "agent",
    rawStatus: "", rawResponder: "", pending: 0, authScopes: [], invites: [], directOpen: "", writing: [], total: 0, updated: "", ...over,
  };
}

export class Fake extends FakeEvents implements ConversationsBackend {
  convs = new Map<string, ConversationState>();
  entriesOf = new Map<string, ConversationEntry[]>();
  calls: string[] = [];
  status() { return Promise.resolve({ available: true, problem: "" }); }
  companies() { return Promise.resolve([{ identifier: CO, name: "Shop" }]); }
  list() { return Promise.resolve([...this.convs.values()]); }
  private st(id: string): ConversationState {
    const c = this.convs.get(id) as ConversationState;
    return { ...c, total: (this.entriesOf.get(id) ?? []).length };
  }
  open(_c: string, id: string) { this.calls.push(`open ${id}`); return Promise.resolve(this.st(id)); }
  state(_c: string, id: string) { return Promise.resolve(this.st(id)); }
  entries(_c: string, id: string, from: number, limit: number) {
    const es = this.entriesOf.get(id) ?? [];
    return Promise.resolve({ from, entries: es.slice(from, from + limit), total: es.length });
  }
  start(_c: string, text: string) { this.calls.push(`start ${text}`); return Promise.resolve(this.st("cnv_1")); }
  send(_c: string, id: string, text: string) { this.calls.push(`send ${id} ${text}`); return Promise.resolve(this.st(id)); }
  handoff(_c: string, id: string) { this.calls.push(`handoff ${id}`); return Promise.resolve(this.st(id)); }
  close(_c: string, id: string) { this.calls.push(`close ${id}`); return Promise.resolve(this.st(id)); }
  acceptUserRequest(_c: string, p: string, e: string) {
    this.calls.push(`accept ${p} ${e}`);
    this.convs.set("cnv_d", conv({ id: "cnv_d", direct: true, parent: p, responder: "human" }));
    return Promise.resolve(this.st("cnv_d"));
  }
  declineUserRequest(_c: string, p: string, e: string) { this.calls.push(`decline ${p} ${e}`); return Promise.resolve(this.st(p)); }
  change(d: ConversationChange) { this.emit(EVENTS.conversationsChanged, d); }
}

export const flush = async () => { for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0)); };
export const ctx = (shown: string[] = []): ViewContext => ({ doc: document, setStatus: () => {}, setBadge: () => {}, show: (id) => shown.push(id),
  empty: () => { const e = document.createElement("div"); e.className = "empty"; return e; } });

export async function mount(f: Fake, shown: string[] = []) {
  const host = document.createElement("div");
  document.body.replaceChildren(host);
  conversationsView(f, { requireTrusted: false, virtual: { viewport: 600, estimate: 60, overscan: 300 } })(host, ctx(shown));
  await flush();
  return host;
}

