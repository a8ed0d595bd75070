import { describe, expect, it, vi } from "vitest";
import { EVENTS, type CompanyList } from "../api";
import { FakeEvents } from "../api/testing";
import { COMPANIES_PAGE, companiesView, type CompaniesBackend } from "./companies";
import { company, context, flush } from "./signin/fixtures";

class FakeCompanies extends FakeEvents implements CompaniesBackend {
  data: CompanyList = {
    companies: [
      {
        company,
        accounts: [{ company: company.identifier, account: "personal", signed_in: true, scopes: ["orders:read"] }],
        scopeWords: {},
        demo: false,
        excludedTasks: [
          { task: "Close an account", alternative: "Call support. On the web: https://shop.example/account" },
          { task: "Change a <b>shipped</b> order", alternative: "" },
        ],
      },
    ],
    next: "",
    total: 1,
  };
  signedOut: string[] = [];
  reads: string[] = [];
  // list pages through data.companies as fronts.Companies.List does (cursor: an index).
  list = (cursor: string, limit: number) => {
    this.reads.push(`${cursor}/${limit}`);
    const all = this.data.companies ?? [];
    const from = cursor ? Number(cursor) : 0;
    const next = from + limit < all.length ? String(from + limit) : "";
    return Promise.resolve(structuredClone({ companies: all.slice(from, from + limit), next, total: all.length }));
  };
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

  it("names the demo's account and puts the Company's words beside each scope", async () => {
    const host = document.createElement("div");
    const b = new FakeCompanies();
    b.data.companies![0].demo = true;
    b.data.companies![0].demoAccount = "personal";
    b.data.companies![0].scopeWords = { "orders:read": "Read your orders" };
    companiesView(b)(host, context([]));
    await flush();
    expect(host.querySelector(".co-account span")!.textContent).toBe("personal (the demo’s account): Read your orders (orders:read)");
    expect(host.querySelector("#co-demo-note")!.textContent).toMatch(/Sign out works/);
  });

  it("calls the user's own sign-in at the demo's Company theirs, not the demo's", async () => {
    const host = document.createElement("div");
    const b = new FakeCompanies();
    b.data.companies![0].demo = true;
    b.data.companies![0].demoAccount = "acct_demo";
    companiesView(b)(host, context([]));
    await flush();
    expect(host.querySelector(".co-account span")!.textContent).toMatch(/^personal: /);
    expect(host.textContent).not.toContain("demo’s account");
    expect(host.querySelector("#co-demo-note")).toBeNull();
  });

  it("shows the tasks a Company does not offer, with the other way, as text", async () => {
    const host = document.createElement("div");
    companiesView(new FakeCompanies())(host, context([]));
    await flush();
    const items = host.querySelectorAll(".co-excluded-task");
    expect(items.length).toBe(2);
    expect(items[0].querySelector(".co-task")!.textContent).toBe("Close an account");
    expect(items[0].querySelector(".co-alternative")!.textContent).toBe("Instead: Call support. On the web: https://shop.example/account");
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
    b.data = { companies: [], next: "", total: 0 };
    companiesView(b)(host, context([]));
    await flush();
    expect(host.querySelector("#empty-state")).not.toBeNull();
  });

  it("reads 200 Companies a page at a time, and a reload after a change keeps what was shown", async () => {
    const host = document.createElement("div");
    const b = new FakeCompanies();
    const one = b.data.companies![0];
    b.data.companies = Array.from({ length: 200 }, (_, i) => ({
      ...structuredClone(one),
      company: { ...one.company, identifier: `https://auth.c${i}.example`, name: `Company ${String(i).padStart(3, "0")}` },
    }));
    b.data.total = 200;
    companiesView(b)(host, context([]));
    expect(host.querySelector("#co-list")!.getAttribute("aria-busy")).toBe("true");
    await flush();
    expect(host.querySelector("#co-list")!.hasAttribute("aria-busy")).toBe(false);
    const cards = () => host.querySelectorAll(".co-card").length;
    expect(cards()).toBe(COMPANIES_PAGE);
    expect(b.reads).toEqual([`/${COMPANIES_PAGE}`]);
    const more = host.querySelector<HTMLButtonElement>("#co-more")!;
    expect(more.textContent).toBe(`Show more Companies (${200 - COMPANIES_PAGE} more)`);
    more.click();
    await flush();
    expect(cards()).toBe(2 * COMPANIES_PAGE);
    expect(b.reads[1]).toBe(`${COMPANIES_PAGE}/${COMPANIES_PAGE}`);
    // Sign out on a card of the second page: the list is read again as far as it was shown.
    const card = host.querySelectorAll<HTMLElement>(".co-card")[COMPANIES_PAGE + 5];
    card.querySelector<HTMLButtonElement>(".co-account button")!.click();
    card.querySelector<HTMLButtonElement>("[id$='-yes']")!.click();
    await flush();
    await flush();
    expect(b.reads[2]).toBe(`/${2 * COMPANIES_PAGE}`);
    expect(cards()).toBe(2 * COMPANIES_PAGE);
    expect(host.querySelector(`[data-company="https://auth.c${COMPANIES_PAGE + 5}.example"]`)).not.toBeNull();
    for (let i = 0; i < 10 && !host.querySelector<HTMLElement>(".co-more")!.hidden; i++) {
      host.querySelector<HTMLButtonElement>("#co-more")!.click();
      await flush();
    }
    expect(cards()).toBe(200);
    expect(host.querySelector<HTMLElement>(".co-more")!.hidden).toBe(true);
    expect(new Set(Array.from(host.querySelectorAll<HTMLElement>(".co-card"), (c) => c.dataset.company)).size).toBe(200);
  }, 30_000);

  it("does not lose a click on Show more while another read runs", async () => {
    const host = document.createElement("div");
    const b = new FakeCompanies();
    const one = b.data.companies![0];
    b.data.companies = Array.from({ length: 100 }, (_, i) => ({
      ...structuredClone(one),
      company: { ...one.company, identifier: `https://auth.c${i}.example`, name: `Company ${String(i).padStart(3, "0")}` },
    }));
    b.data.total = 100;
    companiesView(b)(host, context([]));
    await flush();
    const cards = () => host.querySelectorAll(".co-card").length;
    expect(cards()).toBe(COMPANIES_PAGE);
    // A read that does not answer yet (as the automatic read of a scrolled list can be).
    const list = b.list;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    b.list = (cursor: string, limit: number) => held.then(() => list(cursor, limit));
    const more = host.querySelector<HTMLButtonElement>("#co-more")!;
    more.click();
    await flush();
    expect(more.getAttribute("aria-busy")).toBe("true");
    more.click(); // while the first read runs
    release();
    for (let i = 0; i < 5; i++) await flush();
    expect(cards()).toBe(3 * COMPANIES_PAGE);
    expect(more.hasAttribute("aria-busy")).toBe(false);
    expect(new Set(Array.from(host.querySelectorAll<HTMLElement>(".co-card"), (c) => c.dataset.company)).size).toBe(3 * COMPANIES_PAGE);
  });

  it("reads the list again once for a burst of changes", async () => {
    const host = document.createElement("div");
    const b = new FakeCompanies();
    companiesView(b)(host, context([]));
    await flush();
    expect(b.reads.length).toBe(1);
    for (let i = 0; i < 20; i++) b.emit(EVENTS.companiesChanged);
    for (let i = 0; i < 5; i++) await flush();
    expect(b.reads.length).toBeLessThanOrEqual(3);
    expect(b.reads.length).toBeGreaterThanOrEqual(2);
  });
});
