import { afterEach, describe, expect, it } from "vitest";
import { EVENTS, onEvent } from "./events";

// A runtime like the bridge's shim: listeners per name, removed by the function returned.
class Runtime {
  listeners = new Map<string, { cb: (...data: unknown[]) => void; max: number }[]>();
  EventsOnMultiple(name: string, cb: (...data: unknown[]) => void, max: number): () => void {
    const l = { cb, max };
    this.listeners.set(name, [...(this.listeners.get(name) ?? []), l]);
    return () => this.listeners.set(name, (this.listeners.get(name) ?? []).filter((x) => x !== l));
  }
  emit(name: string, ...data: unknown[]): void {
    for (const l of this.listeners.get(name) ?? []) l.cb(...data);
  }
}

afterEach(() => {
  delete window.runtime;
});

describe("onEvent", () => {
  it("listens for every emission of the named event, with its data, until unsubscribed", () => {
    const rt = new Runtime();
    window.runtime = rt;
    const got: unknown[] = [];
    const off = onEvent(EVENTS.approvalsChanged, (ch) => got.push(ch));
    expect(rt.listeners.get("approvals:changed")?.map((l) => l.max)).toEqual([-1]);
    rt.emit("approvals:changed", { kind: "created", id: "apr_1", state: "pending" });
    rt.emit("approvals:changed", { kind: "state", id: "apr_1", state: "declined" });
    rt.emit("signin:flow", { id: "flow_1" });
    expect(got).toEqual([
      { kind: "created", id: "apr_1", state: "pending" },
      { kind: "state", id: "apr_1", state: "declined" },
    ]);
    off();
    rt.emit("approvals:changed", { kind: "created", id: "apr_2", state: "pending" });
    expect(got).toHaveLength(2);
    expect(rt.listeners.get("approvals:changed")).toEqual([]);
  });

  it("passes nothing for an event without data", () => {
    const rt = new Runtime();
    window.runtime = rt;
    const got: unknown[] = [];
    onEvent(EVENTS.shellSections, (d) => got.push(d));
    rt.emit("shell:sections");
    expect(got).toEqual([undefined]);
  });

  it("does nothing, and fails nothing, in a window without a runtime", () => {
    const off = onEvent(EVENTS.shellStatus, () => {});
    expect(() => off()).not.toThrow();
  });
});

// The Go constants the names mirror, read from app/*.go.
const goSources = import.meta.glob<string>("../../../app/*.go", { query: "?raw", import: "default", eager: true });

describe("the event names", () => {
  it("are the Event constants of app/, each once", () => {
    const goNames: string[] = [];
    for (const [path, src] of Object.entries(goSources)) {
      if (path.endsWith("_test.go")) continue;
      for (const m of src.matchAll(/\bEvent[A-Za-z]*\s*=\s*"([^"]+)"/g)) goNames.push(m[1]);
    }
    const ours = Object.values(EVENTS);
    expect(goNames.length).toBeGreaterThan(0);
    expect([...ours].sort()).toEqual([...goNames].sort());
    expect(new Set(ours).size).toBe(ours.length);
  });
});
