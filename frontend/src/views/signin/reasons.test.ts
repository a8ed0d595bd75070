import { describe, expect, it } from "vitest";
import type { ModelRequest } from "../../api";
import { modelWords, requestTitle, requestWords } from "./reasons";

describe("the model's words", () => {
  it("are marked as the model's and shown as text", () => {
    const box = modelWords("<a href='https://evil.example'>Poppydesk recommends</a> signing in");
    expect(box.textContent).toContain("Your agent says:");
    expect(box.textContent).toContain("not Poppydesk’s");
    expect(box.querySelector("a")).toBeNull();
    expect(box.querySelector("blockquote")!.textContent).toBe("“<a href='https://evil.example'>Poppydesk recommends</a> signing in”");
  });
});

describe("why a sign-in is asked for", () => {
  const base: ModelRequest = { id: "r1", company: "https://auth.shop", name: "Shop", domain: "shop", scopes: ["orders:write"], modelReason: "", poppydeskReason: "", requested: "", scopeWords: {} };
  it.each<[string, ModelRequest, string, string]>([
    ["the model asked", { ...base, modelReason: "to exchange the jacket" }, "Your agent says:", "Your agent asks you to sign in to Shop"],
    ["Poppydesk asked after a refusal", { ...base, poppydeskReason: "Shop asked for the scope orders:write to call exchangeItem" }, "Poppydesk asks because:", "Your agent’s request needs you to sign in to Shop"],
  ])("%s", (_name, r, label, title) => {
    const box = requestWords(r);
    expect(box.textContent).toContain(label);
    expect(requestTitle(r)).toBe(title);
    if (label.startsWith("Poppydesk")) {
      expect(box.textContent).not.toContain("Your agent says");
      expect(box.textContent).toContain("orders:write");
    }
  });
});
