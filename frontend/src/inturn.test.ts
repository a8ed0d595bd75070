import { describe, expect, it } from "vitest";
import { inTurn } from "./inturn";

// deferred is a read the test finishes by hand.
function deferred() {
  let done!: () => void;
  const p = new Promise<void>((r) => (done = r));
  return { p, done };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe("inTurn", () => {
  it("starts each read after the one before has finished, in the order asked", async () => {
    const log: string[] = [];
    const first = deferred();
    const q = inTurn();
    q.run(async () => {
      log.push("a start");
      await first.p;
      log.push("a end");
    });
    q.run(async () => void log.push("b"));
    await settle();
    expect(log).toEqual(["a start"]);
    first.done();
    await settle();
    expect(log).toEqual(["a start", "a end", "b"]);
  });

  it("keeps one reload waiting however many are asked while a read runs", async () => {
    let reads = 0;
    const first = deferred();
    const q = inTurn();
    q.run(() => first.p);
    for (let i = 0; i < 10; i++) q.reload(async () => void reads++);
    first.done();
    await settle();
    expect(reads).toBe(1);
  });

  it("goes on after a read that failed and says when it is busy", async () => {
    const busy: boolean[] = [];
    const q = inTurn((b) => busy.push(b));
    let after = false;
    q.run(() => Promise.reject(new Error("read failed")));
    q.run(async () => void (after = true));
    expect(q.busy()).toBe(true);
    await settle();
    await settle();
    expect(after).toBe(true);
    expect(q.busy()).toBe(false);
    expect(busy).toEqual([true, false]);
  });
});
