import { beforeEach, describe, expect, it } from "vitest";
import { type ActivityEntry, EVENTS, type FeedbackReport } from "../api";
import { FakeEvents } from "../api/testing";
import { type ActivityBackend, activityView, durationOf, statusKind, statusWords } from "./activity";
import type { ViewContext } from "../app";

class FakeActivity extends FakeEvents implements ActivityBackend {
  entries: ActivityEntry[] = [];
  fail: string | null = null;
  list(): Promise<ActivityEntry[] | null> {
    if (this.fail) return Promise.reject(new Error(this.fail));
    return Promise.resolve(this.entries.length ? this.entries : null);
  }
  info() {
    return Promise.resolve({ socket: "/run/user/1000/poppydesk/mcp.sock", listening: true, problem: "" });
  }
  sent: FeedbackReport[] = [];
  reports(): Promise<FeedbackReport[] | null> {
    return Promise.resolve(this.sent.length ? this.sent : null);
  }
}

const flush = () => new Promise((r) => setTimeout(r, 0));

function ctx(): ViewContext {
  return {
    doc: document,
    setStatus: () => {},
    setBadge: () => {},
    show: () => {},
    empty: () => {
      const e = document.createElement("div");
      e.className = "empty";
      const t = document.createElement("h2");
      t.className = "empty-title";
      const p = document.createElement("p");
      p.className = "empty-text";
      e.append(t, p);
      return e;
    },
  };
}

const entry = (seq: number, over: Partial<ActivityEntry> = {}): ActivityEntry => ({
  seq,
  tool: "describe_company",
  company: "shop.example",
  at: "2026-11-29T18:00:00Z",
  status: "done",
  durationMs: 12,
  approvalId: "",
  ...over,
});

describe("status words", () => {
  it.each([
    ["done", "Done", "ok"],
    ["waiting_for_user", "Waiting for you", "attention"],
    ["refused", "Refused", "problem"],
    ["discovery_failed", "discovery failed", "problem"],
    ["something_new", "something new", "ok"],
  ])("%s", (s, words, kind) => {
    expect(statusWords(s)).toBe(words);
    expect(statusKind(s)).toBe(kind);
  });
  it("durations", () => {
    expect(durationOf(12)).toBe("12 ms");
    expect(durationOf(1530)).toBe("1.5 s");
  });
});

describe("activity view", () => {
  let host: HTMLElement;
  let be: FakeActivity;
  beforeEach(() => {
    document.body.innerHTML = "";
    host = document.createElement("main");
    document.body.append(host);
    be = new FakeActivity();
  });

  it("shows the heading and an empty state", async () => {
    activityView(be)(host, ctx());
    await flush();
    expect(host.querySelector("h2#activity-title")?.textContent).toBe("Activity: what your model asked");
    expect(host.querySelector(".empty-title")?.textContent).toContain("not asked anything");
    expect(host.querySelector("#activity-where")?.textContent).toContain("poppydesk mcp");
  });

  it("lists entries newest first as text, and reloads on activity:changed", async () => {
    be.entries = [entry(2, { tool: "call_api_operation", status: "waiting_for_user", company: '<img src=x onerror="alert(1)">' }), entry(1)];
    const leave = activityView(be)(host, ctx());
    await flush();
    const rows = host.querySelectorAll("tbody tr");
    expect(rows.length).toBe(2);
    expect(rows[0].getAttribute("data-seq")).toBe("2");
    expect(rows[0].querySelector(".activity-status")?.textContent).toBe("Waiting for you");
    expect(rows[0].classList.contains("status-attention")).toBe(true);
    // What the model named is shown as literal text, never as markup.
    expect(rows[0].querySelector(".activity-company")?.textContent).toBe('<img src=x onerror="alert(1)">');
    expect(host.querySelector("img")).toBeNull();
    be.entries = [entry(3), ...be.entries];
    be.emit(EVENTS.activityChanged);
    await flush();
    expect(host.querySelectorAll("tbody tr").length).toBe(3);
    if (typeof leave === "function") leave();
    expect(be.listening(EVENTS.activityChanged)).toBe(0);
  });

  it("says when the activity cannot be read", async () => {
    be.fail = "the service is gone";
    activityView(be)(host, ctx());
    await flush();
    expect(host.querySelector(".empty.problem .empty-text")?.textContent).toContain("the service is gone");
  });

  it("shows every report sent to a Company, as sent, as text", async () => {
    activityView(be)(host, ctx());
    await flush();
    expect(host.querySelector("#activity-reports")?.textContent).toContain("No report");
    be.sent = [
      { company: "https://auth.shop.example", task: "Pay with a gift card", description: "No <b>gift card</b> field at [identifier removed].", status: "alternative", at: "2026-11-29T18:00:00Z" },
    ];
    be.emit(EVENTS.activityChanged);
    await flush();
    const r = host.querySelector("#activity-reports .activity-report")!;
    expect(r.querySelector(".activity-report-task")?.textContent).toBe("Pay with a gift card");
    expect(r.querySelector(".activity-report-description")?.textContent).toBe("No <b>gift card</b> field at [identifier removed].");
    expect(r.textContent).toContain("another way");
    expect(host.querySelector("b")).toBeNull();
  });

  it("has no buttons: nothing here decides anything", async () => {
    be.entries = [entry(1, { status: "waiting_for_user" })];
    be.sent = [{ company: "c", task: "t", description: "d", status: "accepted", at: "2026-11-29T18:00:00Z" }];
    activityView(be)(host, ctx());
    await flush();
    expect(host.querySelectorAll("button, a, input").length).toBe(0);
  });
});
