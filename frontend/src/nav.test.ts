import { describe, expect, it } from "vitest";
import { navKey } from "./nav";

describe("navKey", () => {
  const cases: [string, number, number, ReturnType<typeof navKey>][] = [
    ["ArrowDown", 0, 7, { kind: "focus", index: 1 }],
    ["ArrowDown", 6, 7, { kind: "focus", index: 0 }],
    ["ArrowRight", 2, 7, { kind: "focus", index: 3 }],
    ["ArrowUp", 0, 7, { kind: "focus", index: 6 }],
    ["ArrowLeft", 3, 7, { kind: "focus", index: 2 }],
    ["Home", 4, 7, { kind: "focus", index: 0 }],
    ["End", 1, 7, { kind: "focus", index: 6 }],
    ["Enter", 3, 7, { kind: "activate", index: 3 }],
    [" ", 5, 7, { kind: "activate", index: 5 }],
    ["a", 0, 7, null],
    ["Tab", 0, 7, null],
    ["ArrowDown", 0, 0, null],
  ];
  it.each(cases)("%j at %i of %i", (key, cur, count, want) => {
    expect(navKey(key, cur, count)).toEqual(want);
  });
});
