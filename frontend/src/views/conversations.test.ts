import { describe, expect, it } from "vitest";
import {
  APPROVAL_LINE,
  EVENT_CONVERSATIONS,
  Transcript,
  VirtualList,
  authorLabel,
  conversationsView,
  responderWords,
  rowsOfEntry,
  stateLine,
  statusWords,
  type ConvEntry,
  type ConvState,
  type ConversationsBackend,
  type Row,
} from "./conversations";
import type { ViewContext } from "../app";

const CO = "https://auth.shop.localhost:8443";

function entry(i: number, over: Partial<ConvEntry> = {}): ConvEntry {
  return {
    eventId: `evt_${i}`, type: "message", at: "", messageId: `msg_${i}`, author: { kind: "company-agent", name: "", picture: "" },
    text: `Message ${i}`, data: "", operation: "", revision: "", status: "", responder: "", rawStatus: "", rawResponder: "",
    scope: "", reason: "", conversationId: "", ...over,
  };
}

function conv(over: Partial<ConvState> = {}): ConvState {
  return {
    company: CO, id: "cnv_1", title: "Which jacket is warmer?", account: "", parent: "", direct: false, status: "idle", responder: "agent",
    rawStatus: "", rawResponder: "", pending: 0, authScopes: [], invites: [], directOpen: "", writing: [], total: 0, updated: "", ...over,
  };
}

class Fake implements ConversationsBackend {
  convs = new Map<string, ConvState>();
  entriesOf = new Map<string, ConvEntry[]>();
  cbs: ((...d: unknown[]) => void)[] = [];
  calls: string[] = [];
  status() { return Promise.resolve({ available: true, problem: "" }); }
  companies() { return Promise.resolve([{ identifier: CO, name: "Shop" }]); }
  list() { return Promise.resolve([...this.convs.values()]); }
  private st(id: string): ConvState {
    const c = this.convs.get(id) as ConvState;
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
  accept(_c: string, p: string, e: string) {
    this.calls.push(`accept ${p} ${e}`);
    this.convs.set("cnv_d", conv({ id: "cnv_d", direct: true, parent: p, responder: "human" }));
    return Promise.resolve(this.st("cnv_d"));
  }
  decline(_c: string, p: string, e: string) { this.calls.push(`decline ${p} ${e}`); return Promise.resolve(this.st(p)); }
  on(_e: string, cb: (...d: unknown[]) => void) { this.cbs.push(cb); return () => {}; }
  emit(d: unknown) { for (const cb of this.cbs) cb(d); }
}

const flush = async () => { for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0)); };
const ctx = (shown: string[] = []): ViewContext => ({ doc: document, setStatus: () => {}, setBadge: () => {}, show: (id) => shown.push(id),
  empty: () => { const e = document.createElement("div"); e.className = "empty"; return e; } });

async function mount(f: Fake, shown: string[] = []) {
  const host = document.createElement("div");
  document.body.replaceChildren(host);
  conversationsView(f, { requireTrusted: false, virtual: { viewport: 600, estimate: 60, overscan: 300 } })(host, ctx(shown));
  await flush();
  return host;
}

describe("conversation words", () => {
  it.each([
    [{ kind: "model", name: "", picture: "" }, "Your agent"],
    [{ kind: "user", name: "", picture: "" }, "You"],
    [{ kind: "company-agent", name: "", picture: "" }, "Shop’s agent"],
    [{ kind: "company-person", name: "Alex", picture: "" }, "Alex (a person at Shop)"],
    [{ kind: "company-person", name: "", picture: "" }, "A person at Shop"],
  ])("labels %o as %s", (a, want) => {
    expect(authorLabel(a, "Shop")).toBe(want);
  });
  it.each([
    ["working", "working"],
    ["queued", "queued for a person"],
    ["idle", "waiting for your reply"],
    ["closed", "closed"],
  ])("says status %s as %s", (s, want) => expect(statusWords(s)).toBe(want));
  it("says the responder and the whole line in plain words", () => {
    expect(responderWords("human", "Shop")).toBe("a person is handling this");
    expect(responderWords("agent", "Shop")).toBe("Shop’s agent is handling this");
    expect(stateLine({ status: "working", responder: "human" }, "Shop")).toBe("Working · a person is handling this");
    expect(stateLine({ status: "queued", responder: "agent" }, "Shop")).toBe("Queued for a person · Shop’s agent is handling this");
    expect(stateLine({ status: "closed", responder: "agent" }, "Shop")).toBe("Closed");
  });
  it("adds the approval line to a message that carries an operation", () => {
    const rows = rowsOfEntry(entry(1, { operation: "exc_1", revision: "r1" }), "Shop");
    expect(rows.map((r) => r.kind)).toEqual(["message", "approval"]);
    expect(rows[1].text).toBe(APPROVAL_LINE);
  });
  it("gives a person without a data picture an initial placeholder", () => {
    const [r] = rowsOfEntry(entry(1, { author: { kind: "company-person", name: "alex", picture: "" } }), "Shop");
    expect(r.picture).toBeUndefined();
    expect(r.initial).toBe("A");
  });
});

describe("streaming", () => {
  it("shows pieces as they arrive and replaces them with the full message", () => {
    const t = new Transcript("Shop");
    t.add([entry(1, { author: { kind: "user", name: "", picture: "" } })]);
    expect(t.delta("msg_2", "The Stormline ")).toBe(true);
    expect(t.delta("msg_2", "The Stormline Insulated ")).toBe(true);
    let rows = t.rows();
    expect(rows).toHaveLength(2);
    expect(rows[1]).toMatchObject({ kind: "writing", text: "The Stormline Insulated " });
    t.add([entry(2, { text: "The Stormline Insulated Jacket is warmer." })]);
    rows = t.rows();
    expect(rows.map((r) => r.kind)).toEqual(["message", "message"]);
    expect(rows[1].text).toBe("The Stormline Insulated Jacket is warmer.");
    // a late piece of a message already received in full is ignored
    expect(t.delta("msg_2", "The")).toBe(false);
    expect(t.rows()).toHaveLength(2);
  });
  it("drops pieces not received in full after a reconnect", () => {
    const t = new Transcript("Shop");
    t.delta("msg_9", "half a mess");
    t.dropDeltas();
    expect(t.rows()).toHaveLength(0);
  });
});

describe("virtualized list", () => {
  it("keeps the DOM small for 10,000 rows and follows scrolling", () => {
    const scroller = document.createElement("div");
    document.body.replaceChildren(scroller);
    const v = new VirtualList(scroller, (r: Row) => { const d = document.createElement("div"); d.className = "r"; d.textContent = r.text; return d; },
      { viewport: 600, estimate: 50, overscan: 200 });
    const rows: Row[] = Array.from({ length: 10000 }, (_, i) => ({ key: `k${i}`, kind: "message", label: "", text: `row ${i}` }));
    v.setRows(rows, false);
    expect(v.rendered()).toBeLessThan(40);
    expect(scroller.querySelector(".conv-spacer")?.getAttribute("style")).toContain("500000px");
    expect(scroller.textContent).toContain("row 0");
    scroller.scrollTop = 250000;
    scroller.dispatchEvent(new Event("scroll"));
    expect(v.rendered()).toBeLessThan(40);
    const [first, last] = v.range();
    expect(first).toBeLessThanOrEqual(5000);
    expect(last).toBeGreaterThanOrEqual(5011);
    expect(scroller.textContent).toContain("row 5005");
    expect(scroller.textContent).not.toContain("row 0 ");
  });
});

describe("conversations view", () => {
  it("renders a transcript with authors, status, and live pieces replaced by the message", async () => {
    const f = new Fake();
    f.convs.set("cnv_1", conv());
    f.entriesOf.set("cnv_1", [
      entry(1, { author: { kind: "user", name: "", picture: "" }, text: "Which jacket is warmer?" }),
      entry(2, { author: { kind: "model", name: "", picture: "" }, text: "Asking for the user" }),
      entry(3, { text: "<b>The Stormline</b> ⟦U+202E⟧", operation: "exc_1", revision: "r1" }),
      entry(4, { author: { kind: "company-person", name: "Alex", picture: "data:image/png;base64,iVBORw0KGgo=" }, text: "Hi, I'm Alex" }),
    ]);
    const shown: string[] = [];
    const host = await mount(f, shown);
    expect(host.querySelector("#conv-list")?.textContent).toContain("Which jacket is warmer?");
    (host.querySelector(".conv-item") as HTMLButtonElement).click();
    await flush();
    const authors = [...host.querySelectorAll(".conv-author")].map((e) => e.textContent);
    expect(authors).toEqual(["You", "Your agent", "Shop’s agent", "Alex (a person at Shop)"]);
    // Company text is text, never HTML
    expect(host.querySelector(".conv-company-agent .conv-text")?.textContent).toBe("<b>The Stormline</b> ⟦U+202E⟧");
    expect(host.querySelector(".conv-company-agent b")).toBeNull();
    expect(host.querySelector(".conv-approval")?.textContent).toContain(APPROVAL_LINE);
    (host.querySelector(".conv-approval button") as HTMLButtonElement).click();
    expect(shown).toEqual(["approvals"]);
    expect((host.querySelector(".conv-avatar") as HTMLImageElement).getAttribute("src")).toBe("data:image/png;base64,iVBORw0KGgo=");
    expect(host.querySelector("#conv-status")?.textContent).toBe("Waiting for your reply · Shop’s agent is handling this");

    // streaming pieces
    f.emit({ kind: "delta", company: CO, conversationId: "cnv_1", messageId: "msg_5", text: "Hand" });
    expect(host.querySelector("[data-writing]")?.textContent).toContain("Hand");
    f.emit({ kind: "delta", company: CO, conversationId: "cnv_1", messageId: "msg_5", text: "Handing you over" });
    expect(host.querySelector("[data-writing] .conv-text")?.textContent).toBe("Handing you over");
    f.entriesOf.get("cnv_1")?.push(entry(5, { text: "Handing you over to a person." }));
    f.convs.set("cnv_1", conv({ status: "queued", responder: "agent" }));
    f.emit({ kind: "entry", company: CO, conversationId: "cnv_1" });
    await flush();
    expect(host.querySelector("[data-writing]")).toBeNull();
    expect([...host.querySelectorAll(".conv-text")].map((e) => e.textContent)).toContain("Handing you over to a person.");
    expect(host.querySelector("#conv-status")?.textContent).toBe("Queued for a person · Shop’s agent is handling this");
    expect((host.querySelector("#conv-handoff") as HTMLButtonElement).disabled).toBe(true);
  });

  it("sends, hands off and closes with the user's buttons", async () => {
    const f = new Fake();
    f.convs.set("cnv_1", conv());
    const host = await mount(f);
    (host.querySelector(".conv-item") as HTMLButtonElement).click();
    await flush();
    (host.querySelector("#conv-input") as HTMLTextAreaElement).value = "Can I talk to a person?";
    (host.querySelector("#conv-send") as HTMLButtonElement).click();
    await flush();
    (host.querySelector("#conv-handoff") as HTMLButtonElement).click();
    await flush();
    (host.querySelector("#conv-close") as HTMLButtonElement).click();
    await flush();
    expect(f.calls).toEqual(["open cnv_1", "send cnv_1 Can I talk to a person?", "handoff cnv_1", "close cnv_1"]);
  });

  it("starts a conversation from the start box", async () => {
    const f = new Fake();
    f.convs.set("cnv_1", conv());
    const host = await mount(f);
    (host.querySelector("#conv-start-text") as HTMLTextAreaElement).value = "Which jacket is warmer?";
    (host.querySelector("#conv-start") as HTMLButtonElement).click();
    await flush();
    expect(f.calls.slice(0, 2)).toEqual(["start Which jacket is warmer?", "open cnv_1"]);
  });

  it("asks the user before accepting the Company's request, and can decline", async () => {
    const f = new Fake();
    f.convs.set("cnv_1", conv({ invites: [{ eventId: "evt_ur", reason: "A specialist needs you", at: "" }] }));
    const host = await mount(f);
    (host.querySelector(".conv-item") as HTMLButtonElement).click();
    await flush();
    expect(f.calls).toEqual(["open cnv_1"]); // nothing accepted by showing it
    expect(host.querySelector("#conv-invite")?.hasAttribute("hidden")).toBe(false);
    expect(host.querySelector("#conv-invite-reason")?.textContent).toBe("A specialist needs you");
    (host.querySelector("#conv-decline") as HTMLButtonElement).click();
    await flush();
    expect(f.calls).toEqual(["open cnv_1", "decline cnv_1 evt_ur"]);
  });

  it("accepts only on the user's click and opens the Direct Conversation", async () => {
    const f = new Fake();
    f.convs.set("cnv_1", conv({ invites: [{ eventId: "evt_ur", reason: "", at: "" }] }));
    const host = await mount(f);
    (host.querySelector(".conv-item") as HTMLButtonElement).click();
    await flush();
    (host.querySelector("#conv-accept") as HTMLButtonElement).click();
    await flush();
    expect(f.calls).toContain("accept cnv_1 evt_ur");
    expect(f.calls).toContain("open cnv_d");
    expect(host.querySelector("#conv-title")?.textContent).toBe("Direct Conversation with Shop");
    expect(host.querySelector("#conv-kind")?.textContent).toContain("yourself");
  });

  it("ignores synthetic clicks on Accept in the window", async () => {
    const f = new Fake();
    f.convs.set("cnv_1", conv({ invites: [{ eventId: "evt_ur", reason: "", at: "" }] }));
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    conversationsView(f, { virtual: { viewport: 600 } })(host, ctx());
    await flush();
    (host.querySelector(".conv-item") as HTMLButtonElement).click();
    await flush();
    (host.querySelector("#conv-accept") as HTMLButtonElement).click();
    await flush();
    expect(f.calls.some((c) => c.startsWith("accept"))).toBe(false);
  });

  it("renders a 10,000-event conversation with a small DOM", async () => {
    const f = new Fake();
    f.convs.set("cnv_1", conv());
    f.entriesOf.set("cnv_1", Array.from({ length: 10000 }, (_, i) => entry(i)));
    const host = await mount(f);
    (host.querySelector(".conv-item") as HTMLButtonElement).click();
    await flush();
    const rows = host.querySelectorAll(".conv-row").length;
    expect(rows).toBeGreaterThan(0);
    expect(rows).toBeLessThan(60);
    expect(host.querySelector("#conv-scroll")?.textContent).toContain("Message 9999");
  });

  it("ignores changes of other Companies", async () => {
    const f = new Fake();
    f.convs.set("cnv_1", conv());
    const host = await mount(f);
    (host.querySelector(".conv-item") as HTMLButtonElement).click();
    await flush();
    f.emit({ kind: "delta", company: "https://other.example", conversationId: "cnv_1", messageId: "m", text: "x" });
    expect(host.querySelector("[data-writing]")).toBeNull();
    expect(EVENT_CONVERSATIONS).toBe("conversations:changed");
  });
});

describe("conversations view without conversations", () => {
  it("shows the section's empty state when no service answers or nothing is available", async () => {
    const f = new Fake();
    f.status = () => Promise.reject(new Error("the Conversations service is not bound in this window"));
    let host = await mount(f);
    expect(host.querySelector(".empty")).not.toBeNull();
    const g = new Fake();
    g.status = () => Promise.resolve({ available: false, problem: "the engine is not running" });
    host = await mount(g);
    expect(host.querySelector(".empty")).not.toBeNull();
    expect(host.querySelector("#conv-problem")?.textContent).toBe("the engine is not running");
  });
});
