import { describe, expect, it } from "vitest";
import { authorLabel, responderWords, stateLine, statusWords } from "./words";

describe("conversation words", () => {
  it.each([
    [{ kind: "model", name: "", picture: "" }, "Your agent"],
    [{ kind: "user", name: "", picture: "" }, "You"],
    [{ kind: "company-agent", name: "", picture: "" }, "Shop’s agent"],
    [{ kind: "company-person", name: "Alex", picture: "" }, "Alex (a person at Shop)"],
    [{ kind: "company-person", name: "", picture: "" }, "A person at Shop"],
  ])("labels %o as %s", (a, want) => {
    expect(authorLabel(a, "Shop")).toBe(want);
  });
  it.each([
    ["working", "working"],
    ["queued", "queued for a person"],
    ["idle", "waiting for your reply"],
    ["closed", "closed"],
  ])("says status %s as %s", (s, want) => expect(statusWords(s)).toBe(want));
  it("says the responder and the whole line in plain words", () => {
    expect(responderWords("human", "Shop")).toBe("a person is handling this");
    expect(responderWords("agent", "Shop")).toBe("Shop’s agent is handling this");
    expect(stateLine({ status: "working", responder: "human" }, "Shop")).toBe("Working · a person is handling this");
    expect(stateLine({ status: "queued", responder: "agent" }, "Shop")).toBe("Queued for a person · Shop’s agent is handling this");
    expect(stateLine({ status: "closed", responder: "agent" }, "Shop")).toBe("Closed");
  });
});
