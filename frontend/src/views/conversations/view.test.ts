import { describe, expect, it } from "vitest";
import { CO, Fake, conv, ctx, entry, flush, mount } from "./fixtures";
import { conversationsView } from "./view";
import { APPROVAL_LINE } from "./words";

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
    f.change({ kind: "delta", company: CO, conversationId: "cnv_1", messageId: "msg_5", text: "Hand" });
    expect(host.querySelector("[data-writing]")?.textContent).toContain("Hand");
    f.change({ kind: "delta", company: CO, conversationId: "cnv_1", messageId: "msg_5", text: "Handing you over" });
    expect(host.querySelector("[data-writing] .conv-text")?.textContent).toBe("Handing you over");
    f.entriesOf.get("cnv_1")?.push(entry(5, { text: "Handing you over to a person." }));
    f.convs.set("cnv_1", conv({ status: "queued", responder: "agent" }));
    f.change({ kind: "entry", company: CO, conversationId: "cnv_1" });
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
    f.change({ kind: "delta", company: "https://other.example", conversationId: "cnv_1", messageId: "m", text: "x" });
    expect(host.querySelector("[data-writing]")).toBeNull();
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

  it("says why when the Companies to talk with can't be read", async () => {
    const f = new Fake();
    f.companies = () => Promise.reject(new Error("listing the Companies failed: the state database is locked"));
    const host = await mount(f, []);
    expect(host.querySelector(".empty")).not.toBeNull();
    expect(host.querySelector("#conv-problem")?.textContent).toContain("Conversations are unavailable: listing the Companies failed: the state database is locked");
  });
});
