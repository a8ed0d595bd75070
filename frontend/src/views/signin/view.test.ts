import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EVENTS } from "../../api";
import { FakeSignIn, company, context, flush, plan } from "./fixtures";
import { openSignIn } from "./handover";
import { signInView } from "./view";

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
    b.emit(EVENTS.signInFlow, { ...b.waiting, state: "succeeded", granted: ["orders:read"], missing: ["orders:write"], message: "You signed in to Shop." });
    expect(host.querySelector("#si-flow-title")!.textContent).toBe("Signed in to Shop <b>bold</b>");
    expect([...host.querySelectorAll("#si-granted .si-scope")].map((e) => (e as HTMLElement).dataset.scope)).toEqual(["orders:read"]);
    expect(host.querySelector("#si-missing")!.textContent).toContain("orders:write");
  });

  it("shows the link to copy when the browser did not open", async () => {
    const b = new FakeSignIn();
    b.waiting.openError = "opening the browser failed: no xdg-open";
    await mountPlan(b);
    host.querySelector<HTMLButtonElement>("#si-direct")!.click();
    await flush();
    expect(host.querySelector("#si-open-error")!.textContent).toContain("no xdg-open");
    expect(host.querySelector<HTMLInputElement>("#si-url")!.value).toBe(b.waiting.url);
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
    b.emit(EVENTS.signInFlow, { ...b.waiting, state: "declined", message: "The sign-in was declined at Shop.", detail: "access_denied" });
    expect(host.querySelector("#si-flow-title")!.textContent).toBe("The sign-in was declined");
    expect(host.querySelector("#si-message")!.textContent).toBe("The sign-in was declined at Shop.");
  });
});
