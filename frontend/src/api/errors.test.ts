import { describe, expect, it } from "vitest";
import { NO_DETAILS, describeError } from "./errors";

describe("describeError", () => {
  it("uses the text Wails rejects with as it is", () => {
    expect(describeError("the revision expired")).toBe("the revision expired");
    expect(describeError("<b>not markup</b>")).toBe("<b>not markup</b>");
  });
  it("uses an Error's message (the bridge's own failures)", () => {
    expect(describeError(new Error("the Activity service is not bound in this window"))).toBe("the Activity service is not bound in this window");
    expect(describeError(new TypeError("Failed to fetch"))).toBe("Failed to fetch");
    expect(describeError(new Error(""))).toBe("Error");
  });
  it("uses the message of an error-like object", () => {
    expect(describeError({ message: "discovery failed: spec 3" })).toBe("discovery failed: spec 3");
  });
  it.each([[undefined], [null], [""], ["  "], [42], [{}], [{ message: 7 }], [["a"]]])("says there are no details for %j", (err) => {
    expect(describeError(err)).toBe(NO_DETAILS);
  });
  it("reads as the end of a sentence", () => {
    expect(`Approving failed: ${describeError(undefined)}`).toBe("Approving failed: an unexpected error with no details");
  });
});
