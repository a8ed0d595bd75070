import { describe, expect, it } from "vitest";
import { changesOf, hintTexts } from "./scopes";

describe("scope hints (spec 4.7)", () => {
  it.each([
    ["none", true, "none"],
    ["reversible", true, "reversible"],
    ["irreversible", true, "irreversible"],
    ["catastrophic", true, "irreversible"],
    ["", true, "irreversible"],
    ["none", false, "irreversible"],
  ])("changes %j (hinted %s) is shown as %s", (changes, hinted, want) => {
    expect(changesOf({ changes, hinted })).toBe(want);
  });

  it("names personal data and unhinted scopes", () => {
    const kinds = (s: Parameters<typeof hintTexts>[0]) => hintTexts(s).map((h) => h.kind);
    expect(kinds({ name: "a", changes: "none", personal_data: false, hinted: true, held: false })).toEqual(["changes-none"]);
    expect(kinds({ name: "a", changes: "reversible", personal_data: true, hinted: true, held: false })).toEqual(["changes-reversible", "personal"]);
    expect(kinds({ name: "a", changes: "none", personal_data: false, hinted: false, held: false })).toEqual(["changes-irreversible", "personal", "unhinted"]);
  });
});
