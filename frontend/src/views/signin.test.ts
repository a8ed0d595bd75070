import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ViewContext } from "../app";
import {
  changesOf,
  formatCountdown,
  hintTexts,
  modelWords,
  offeredWords,
  requestTitle,
  requestWords,
  openSignIn,
  secondsLeft,
  signInView,
  EVENT_SIGNIN_FLOW,
  type FlowView,
  type ModelRequest,
  type SignInBackend,
  type SignInPlan,
} from "./signin";
import { companiesView, type CompaniesBackend, type CompanyList } from "./companies";

const company = {
  identifier: "https://auth.shop.localhost:8443",
  name: "Shop <b>bold</b>",
  domain: "shop.localhost:8443",
  issuer: "https://auth.shop.localhost:8443",
  logo: "",
  signIn: { offered: true, disabled: false, direct: true, device: true },
};

const plan: SignInPlan = {
  company,
  account: "personal",
  accounts: [],
  scopes: [
    { name: "orders:read", description: "See your orders", changes: "none", personal_data: true, hinted: true, held: false, checked: true, requested: true },
    { name: "orders:write", description: "Change orders", changes: "irreversible", personal_data: true, hinted: true, held: false, checked: false, requested: false },
    { name: "future", description: "Something new", changes: "catastrophic", personal_data: false, hinted: true, held: false, checked: false, requested: false },
    { name: "bare", changes: "irreversible", personal_data: true, hinted: false, held: false, checked: false, requested: false },
  ],
  request: { id: "signin_1", company: company.identifier, name: "Shop", domain: company.domain, scopes: ["orders:read"], modelReason: "<img src=x> I need to see your orders", requested: "" },
};

class FakeSignIn implements SignInBackend {
  listeners = new Map<string, ((...d: unknown[]) => void)[]>();
  started: { kind: string; scopes: string[]; request: string }[] = [];
  reqs: ModelRequest[] = [];
  flow: FlowView = {
    id: "flow_1",
    kind: "direct",
    state: "waiting",
    company,
    account: "personal",
    requested: plan.scopes,
    deadline: "",
    remainingSeconds: 600,
    url: "https://auth.shop.localhost:8443/oauth/authorize?x=1",
  };
  plan = () => Promise.resolve(structuredClone(plan));
  startDirect = (_c: string, _a: string, scopes: string[], request: string) => {
    this.started.push({ kind: "direct", scopes, request });
    return Promise.resolve({ ...this.flow });
  };
  startDevice = (_c: string, _a: string, scopes: string[], request: string) => {
    this.started.push({ kind: "device", scopes, request });
    return Promise.resolve({
      ...this.flow,
      kind: "device",
      device: { organization: "Shop", domain: company.domain, verificationUri: "https://auth.shop.localhost:8443/device", verificationUriComplete: "https://auth.shop.localhost:8443/device?user_code=BCDF-GHJK", userCode: "BCDF-GHJK", qr: "data:image/png;base64,AAAA", intervalSeconds: 5 },
    });
  };
  cancel = vi.fn(() => Promise.resolve());
  current = () => Promise.resolve({ id: "" } as FlowView);
  requests = () => Promise.resolve(this.reqs);
  dismissRequest = vi.fn(() => Promise.resolve());
  on(event: string, cb: (...d: unknown[]) => void): () => void {
    const l = this.listeners.get(event) ?? [];
    l.push(cb);
    this.listeners.set(event, l);
    return () => {};
  }
  emit(event: string, ...d: unknown[]): void {
    for (const cb of this.listeners.get(event) ?? []) cb(...d);
  }
}

function context(shown: string[]): ViewContext {
  return {
    doc: document,
    setStatus: () => {},
    setBadge: () => {},
    show: (id) => shown.push(id),
    empty: () => {
      const e = document.createElement("section");
      e.id = "empty-state";
      e.textContent = "No sign-in in progress";
      return e;
    },
  };
}

const flush = () => new Promise((r) => setTimeout(r, 0));

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

describe("offered sign-in types", () => {
  it.each([
    [{ offered: true, disabled: false, direct: true, device: true }, "sign-in in your browser and sign-in on another device"],
    [{ offered: true, disabled: false, direct: false, device: true }, "offers sign-in on another device."],
    [{ offered: false, disabled: true, direct: false, device: false }, "turned sign-in off"],
    [{ offered: false, disabled: false, direct: false, device: false }, "offers no sign-in"],
  ])("%j", (o, want) => expect(offeredWords(o)).toContain(want));
});

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
  const base: ModelRequest = { id: "r1", company: "https://auth.shop", name: "Shop", domain: "shop", scopes: ["orders:write"], modelReason: "", requested: "" };
  it.each([
    ["the model asked", { ...base, modelReason: "to exchange the jacket" }, "Your agent says:", "Your agent asks you to sign in to Shop"],
    ["Poppydesk asked after a refusal", { ...base, poppydeskReason: "Shop asked for the scope orders:write to call exchangeItem" }, "Poppydesk asks because:", "Your agent’s request needs you to sign in to Shop"],
  ])("%s", (_name, r, label, title) => {
    const box = requestWords(r as ModelRequest);
    expect(box.textContent).toContain(label);
    expect(requestTitle(r as ModelRequest)).toBe(title);
    if (label.startsWith("Poppydesk")) {
      expect(box.textContent).not.toContain("Your agent says");
      expect(box.textContent).toContain("orders:write");
    }
  });
});

describe("the Sign-in view", () => {
  let host: HTMLElement;
  let shown: string[];
  let clock: number;
  beforeEach(() => {
    document.body.innerHTML = "";
    host = document.createElement("div");
    document.body.appendChild(host);
    shown = [];
    clock = 1_000_000;
  });
  afterEach(() => vi.useRealTimers());

  async function mountPlan(b: FakeSignIn) {
    const ctx = context(shown);
    openSignIn(ctx, company.identifier, "signin_1");
    expect(shown).toEqual(["signin"]);
    const leave = signInView(b, { now: () => clock, requireTrusted: false })(host, ctx);
    await flush();
    return leave as () => void;
  }

  it("shows the empty state when nothing is asked or running", async () => {
    signInView(new FakeSignIn(), { requireTrusted: false })(host, context(shown));
    await flush();
    expect(host.querySelector("#empty-state")).not.toBeNull();
  });

  it("lists the model's requests with its reason marked, and starts nothing", async () => {
    const b = new FakeSignIn();
    b.reqs = [plan.request!];
    signInView(b, { requireTrusted: false })(host, context(shown));
    await flush();
    expect(host.querySelector(".si-request")!.textContent).toContain("Your agent says:");
    expect(host.querySelector("img")).toBeNull();
    expect(b.started).toEqual([]);
  });

  it("shows the verified Company, the scopes with their hints, and ticked boxes", async () => {
    const b = new FakeSignIn();
    await mountPlan(b);
    expect(host.querySelector("#si-company-name")!.textContent).toBe("Shop <b>bold</b>");
    expect(host.querySelector("b")).toBeNull();
    expect(host.querySelector(".si-logo-placeholder")!.textContent).toBe("S");
    const items = [...host.querySelectorAll<HTMLElement>(".si-scope")];
    expect(items.map((i) => i.dataset.changes)).toEqual(["none", "irreversible", "irreversible", "irreversible"]);
    expect(items[2].textContent).toContain("Changes can’t be undone");
    expect(items[3].textContent).toContain("No hints from the Company");
    const boxes = [...host.querySelectorAll<HTMLInputElement>("#si-scopes input[type=checkbox]")];
    expect(boxes.map((x) => x.checked)).toEqual([true, false, false, false]);
    expect(host.querySelector(".si-model")!.textContent).toContain("I need to see your orders");
    expect(b.started).toEqual([]);
  });

  it("keeps the buttons off when every box is unticked", async () => {
    const b = new FakeSignIn();
    await mountPlan(b);
    const box = host.querySelector<HTMLInputElement>("#si-scope-0")!;
    box.checked = false;
    box.dispatchEvent(new Event("change"));
    expect(host.querySelector<HTMLButtonElement>("#si-direct")!.disabled).toBe(true);
    expect(host.querySelector<HTMLButtonElement>("#si-device")!.disabled).toBe(true);
    expect(host.querySelector("#si-error")!.textContent).toContain("at least one scope");
  });

  it("ignores synthetic clicks on the sign-in buttons when trust is required", async () => {
    const b = new FakeSignIn();
    const ctx = context(shown);
    openSignIn(ctx, company.identifier);
    signInView(b, { requireTrusted: true })(host, ctx);
    await flush();
    host.querySelector<HTMLButtonElement>("#si-direct")!.click();
    host.querySelector<HTMLButtonElement>("#si-device")!.click();
    await flush();
    expect(b.started).toEqual([]);
  });

  it("starts Direct Sign-In with the ticked scopes, counts down, and shows the granted scopes", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const b = new FakeSignIn();
    await mountPlan(b);
    const write = host.querySelector<HTMLInputElement>("#si-scope-1")!;
    write.checked = true;
    write.dispatchEvent(new Event("change"));
    host.querySelector<HTMLButtonElement>("#si-direct")!.click();
    await flush();
    expect(b.started).toEqual([{ kind: "direct", scopes: ["orders:read", "orders:write"], request: "signin_1" }]);
    expect(host.querySelector("#si-flow-title")!.textContent).toBe("Waiting for you to finish in your browser…");
    expect(host.querySelector("#si-countdown")!.textContent).toBe("10:00");
    clock += 61_000;
    vi.advanceTimersByTime(1000);
    expect(host.querySelector("#si-countdown")!.textContent).toBe("8:59");
    host.querySelector<HTMLButtonElement>("#si-cancel")!.click();
    expect(b.cancel).toHaveBeenCalledWith("flow_1");
    b.emit(EVENT_SIGNIN_FLOW, { ...b.flow, state: "succeeded", granted: ["orders:read"], missing: ["orders:write"], message: "You signed in to Shop." });
    expect(host.querySelector("#si-flow-title")!.textContent).toBe("Signed in to Shop <b>bold</b>");
    expect([...host.querySelectorAll("#si-granted .si-scope")].map((e) => (e as HTMLElement).dataset.scope)).toEqual(["orders:read"]);
    expect(host.querySelector("#si-missing")!.textContent).toContain("orders:write");
  });

  it("shows the link to copy when the browser did not open", async () => {
    const b = new FakeSignIn();
    b.flow.openError = "opening the browser failed: no xdg-open";
    await mountPlan(b);
    host.querySelector<HTMLButtonElement>("#si-direct")!.click();
    await flush();
    expect(host.querySelector("#si-open-error")!.textContent).toContain("no xdg-open");
    expect(host.querySelector<HTMLInputElement>("#si-url")!.value).toBe(b.flow.url);
  });

  it("shows Device Sign-In's code, link, QR code and the Company, never a device code", async () => {
    const b = new FakeSignIn();
    await mountPlan(b);
    host.querySelector<HTMLButtonElement>("#si-device")!.click();
    await flush();
    expect(host.querySelector("#si-user-code")!.textContent).toBe("BCDF-GHJK");
    expect(host.querySelector("#si-link")!.textContent).toBe("https://auth.shop.localhost:8443/device");
    expect(host.querySelector<HTMLImageElement>("#si-qr")!.getAttribute("src")).toMatch(/^data:image\/png;base64,/);
    expect(host.textContent).toContain("Shop (shop.localhost:8443)");
    expect(host.querySelector("#si-countdown")).not.toBeNull();
  });

  it("says why a sign-in failed", async () => {
    const b = new FakeSignIn();
    await mountPlan(b);
    host.querySelector<HTMLButtonElement>("#si-direct")!.click();
    await flush();
    b.emit(EVENT_SIGNIN_FLOW, { ...b.flow, state: "declined", message: "The sign-in was declined at Shop.", detail: "access_denied" });
    expect(host.querySelector("#si-flow-title")!.textContent).toBe("The sign-in was declined");
    expect(host.querySelector("#si-message")!.textContent).toBe("The sign-in was declined at Shop.");
  });
});

class FakeCompanies implements CompaniesBackend {
  data: CompanyList = {
    companies: [{ company, accounts: [{ company: company.identifier, account: "personal", signed_in: true, scopes: ["orders:read"] }] }],
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
  on = () => () => {};
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
