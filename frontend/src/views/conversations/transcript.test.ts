import { describe, expect, it } from "vitest";
import { entry } from "./fixtures";
import { Transcript, rowsOfEntry } from "./transcript";
import { APPROVAL_LINE } from "./words";

describe("transcript rows", () => {
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
