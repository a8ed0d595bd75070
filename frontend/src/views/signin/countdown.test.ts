import { describe, expect, it } from "vitest";
import { formatCountdown, secondsLeft } from "./countdown";

describe("countdown", () => {
  it.each([
    [0, "0:00"],
    [5, "0:05"],
    [65, "1:05"],
    [600, "10:00"],
    [3725, "1:02:05"],
    [-3, "0:00"],
  ])("%d s is %s", (s, want) => expect(formatCountdown(s)).toBe(want));

  it("counts down from when the view arrived, whatever the clocks say", () => {
    expect(secondsLeft(600, 1_000, 1_000)).toBe(600);
    expect(secondsLeft(600, 1_000, 2_500)).toBe(599);
    expect(secondsLeft(600, 1_000, 601_000)).toBe(0);
    expect(secondsLeft(600, 1_000, 900_000)).toBe(0);
  });
});
