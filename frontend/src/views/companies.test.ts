import { describe, expect, it, vi } from "vitest";
import type { CompanyList } from "../api";
import { FakeEvents } from "../api/testing";
import { companiesView, type CompaniesBackend } from "./companies";
import { company, context, flush } from "./signin/fixtures";

class FakeCompanies extends FakeEvents implements CompaniesBackend {
  data: CompanyList = {
    companies: [
      {
        company,
        accounts: [{ company: company.identifier, account: "personal", signed_in: true, scopes: ["orders:read"] }],
        excludedTasks: [
          { task: "Close an account", alternative: "Call support. On the web: https://shop.example/account" },
          { task: "Change a <b>shipped</b> order", alternative: "" },
        ],
      },
    ],
  };
  signedOut: string[] = [];
  list = () => Promise.resolve(structuredClone(this.data));
  discover = vi.fn((d: string) => (d === "bad.example" ? Promise.reject("discovery failed: spec 3") : Promise.resolve(this.data.companies![0])));
  signOut = (c: string, a: string) => {
    this.signedOut.push(`${c} ${a}`);
    this.data.companies![0].accounts = [];
    return Promise.resolve();
  };
  forget = vi.fn(() => Promise.resolve());
}

describe("the Companies view", () => {
  it("lists Companies with accounts and scopes, signs out after confirmation, and opens Sign-in", async () => {
    const host = document.createElement("div");
    const shown: string[] = [];
    const b = new FakeCompanies();
    companiesView(b)(host, context(shown));
    await flush();
    const card = host.querySelector<HTMLElement>(".co-card")!;
    expect(card.dataset.company).toBe(company.identifier);
    expect(card.textContent).toContain("personal: orders:read");
    expect(card.textContent).toContain("shop.localhost:8443");
    const out = card.querySelector<HTMLButtonElement>(".co-account button")!;
    out.click();
    expect(b.signedOut).toEqual([]);
    card.querySelector<HTMLButtonElement>("[id$='-yes']")!.click();
    await flush();
    await flush();
    expect(b.signedOut).toEqual([`${company.identifier} personal`]);
    expect(host.querySelector(".co-card")!.textContent).toContain("Not signed in.");
    host.querySelector<HTMLButtonElement>("[data-action=signin]")!.click();
    expect(shown).toEqual(["signin"]);
  });

  it("shows the tasks a Company does not offer, with the other way, as text", async () => {
    const host = document.createElement("div");
    companiesView(new FakeCompanies())(host, context([]));
    await flush();
    const items = host.querySelectorAll(".co-excluded-task");
    expect(items.length).toBe(2);
    expect(items[0].textContent).toBe("Close an account Instead: Call support. On the web: https://shop.example/account");
    expect(items[1].textContent).toBe("Change a <b>shipped</b> order");
    expect(host.querySelector(".co-card b, .co-card a")).toBeNull();
  });

  it("says why the tasks a Company does not offer could not be read", async () => {
    const host = document.createElement("div");
    const b = new FakeCompanies();
    b.data.companies![0].excludedTasks = [];
    b.data.companies![0].excludedTasksProblem = "the document answered HTTP 404";
    companiesView(b)(host, context([]));
    await flush();
    expect(host.querySelector(".co-card")!.textContent).toContain("Not offeredthe document answered HTTP 404");
  });

  it("discovers a typed domain and reports failures in words", async () => {
    const host = document.createElement("div");
    const b = new FakeCompanies();
    companiesView(b)(host, context([]));
    await flush();
    const input = host.querySelector<HTMLInputElement>("#co-domain")!;
    input.value = "bad.example";
    host.querySelector<HTMLFormElement>("#co-discover-form")!.dispatchEvent(new Event("submit", { cancelable: true }));
    await flush();
    expect(b.discover).toHaveBeenCalledWith("bad.example");
    expect(host.querySelector("#co-message")!.textContent).toBe("discovery failed: spec 3");
  });

  it("shows the empty state when there is no Company", async () => {
    const host = document.createElement("div");
    const b = new FakeCompanies();
    b.data = { companies: [] };
    companiesView(b)(host, context([]));
    await flush();
    expect(host.querySelector("#empty-state")).not.toBeNull();
  });
});
