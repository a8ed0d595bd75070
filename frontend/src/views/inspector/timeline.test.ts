import { afterEach, describe, expect, it, vi } from "vitest";
import { EVENTS, type InspectorAPI, type InspectorPage, type InspectorQuery } from "../../api";
import { FakeEvents } from "../../api/testing";
import { timelineView } from "./timeline";

// SlowInspector answers each list read only when the test lets it, as a Host under load does.
class SlowInspector extends FakeEvents {
  waiting: { q: InspectorQuery; at: number; answer: () => void }[] = [];
  list = (q: InspectorQuery) =>
    new Promise<InspectorPage>((resolve) => {
      const page = { rows: [], total: 7, searched: 5000, capped: true, companies: [], sessions: [] } as unknown as InspectorPage;
      this.waiting.push({ q, at: Date.now(), answer: () => resolve(page) });
    });
  // answerOlderThan answers every read that has run for ms or longer.
  answerOlderThan(ms: number) {
    const now = Date.now();
    for (const w of this.waiting.filter((w) => now - w.at >= ms)) {
      this.waiting.splice(this.waiting.indexOf(w), 1);
      w.answer();
    }
  }
  entry = vi.fn();
  exportHAR = vi.fn();
  exportCurl = vi.fn();
  findings = vi.fn();
  faults = vi.fn();
  setFault = vi.fn();
}

afterEach(() => vi.useRealTimers());

describe("the Inspector's timeline", () => {
  it("appears while new exchanges keep arriving faster than a read answers", async () => {
    vi.useFakeTimers();
    const backend = new SlowInspector();
    const host = document.createElement("div");
    const stop = timelineView(backend as unknown as InspectorAPI, host);
    const summary = host.querySelector("#insp-summary")!;
    // Every 100 ms an exchange is recorded; every read takes 400 ms to answer.
    for (let t = 0; t < 4000 && summary.textContent === ""; t += 100) {
      backend.emit(EVENTS.inspectorChanged);
      await vi.advanceTimersByTimeAsync(100);
      backend.answerOlderThan(400);
    }
    expect(summary.textContent).toContain("among the log’s newest 5000");
    // At most one read runs and one waits behind it, however many exchanges arrived.
    expect(backend.waiting.length).toBeLessThanOrEqual(1);
    stop();
  });

  it("reads with the filters as they are when the read starts, once after a burst of keystrokes", async () => {
    const backend = new SlowInspector();
    const host = document.createElement("div");
    const stop = timelineView(backend as unknown as InspectorAPI, host);
    const search = host.querySelector<HTMLInputElement>("#insp-search")!;
    await new Promise((r) => setTimeout(r, 0));
    expect(backend.waiting.map((w) => w.q.search)).toEqual([""]);
    for (const v of ["j", "ja", "jac", "jack"]) {
      search.value = v;
      search.dispatchEvent(new Event("input"));
    }
    backend.waiting.shift()!.answer();
    await new Promise((r) => setTimeout(r, 0));
    expect(backend.waiting.map((w) => w.q.search)).toEqual(["jack"]);
    stop();
  });
});
