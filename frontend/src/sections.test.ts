import { describe, expect, it } from "vitest";
import { DEFAULT_SECTION, SECTIONS, sectionFromHash } from "./sections";

describe("sections", () => {
  it("match the Go side's section IDs, in order", () => {
    expect(SECTIONS.map((s) => s.id)).toEqual([
      "approvals",
      "companies",
      "signin",
      "conversations",
      "browser",
      "inspector",
      "settings",
    ]);
  });

  it("each has an empty state in plain words", () => {
    for (const s of SECTIONS) {
      expect(s.emptyTitle.length).toBeGreaterThan(8);
      expect(s.emptyText.length).toBeGreaterThan(60);
      expect(s.emptyText).toMatch(/here/);
      expect(s.emptyText).not.toMatch(/[<>]/);
    }
  });

  it.each([
    ["#/companies", "companies"],
    ["#/signin", "signin"],
    ["#/nope", DEFAULT_SECTION],
    ["#main", DEFAULT_SECTION],
    ["", DEFAULT_SECTION],
    ["#/companies/x", DEFAULT_SECTION],
  ])("hash %j opens %j", (hash, want) => {
    expect(sectionFromHash(hash)).toBe(want);
  });
});
