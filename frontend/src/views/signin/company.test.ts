import { describe, expect, it } from "vitest";
import { offeredWords } from "./company";

describe("offered sign-in types", () => {
  it.each([
    [{ offered: true, disabled: false, direct: true, device: true }, "sign-in in your browser and sign-in on another device"],
    [{ offered: true, disabled: false, direct: false, device: true }, "offers sign-in on another device."],
    [{ offered: false, disabled: true, direct: false, device: false }, "turned sign-in off"],
    [{ offered: false, disabled: false, direct: false, device: false }, "offers no sign-in"],
  ])("%j", (o, want) => expect(offeredWords(o)).toContain(want));
});
