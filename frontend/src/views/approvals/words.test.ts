import { describe, expect, it } from "vitest";
import { formatRemaining } from "./words";

describe("formatRemaining", () => {
  it.each([
    [0, "expired"],
    [1, "1 s"],
    [59_000, "59 s"],
    [61_000, "1 min 01 s"],
    [3_600_000, "1 h 0 min"],
    [5 * 86_400_000, "5 days"],
  ])("%d ms → %s", (ms, want) => expect(formatRemaining(ms)).toBe(want));
});
