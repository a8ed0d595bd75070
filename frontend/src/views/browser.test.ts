import { describe, expect, it } from "vitest";
import { type BrowserState, EVENTS } from "../api";
import { FakeEvents } from "../api/testing";
import { browserView, joinLine, safeShot, type BrowserBackend } from "./browser";
import type { ViewContext } from "../app";

const base: BrowserState = {
  open: true, company: "https://auth.shop.localhost:8443", companyName: "Shop <b>x</b>", account: "personal",
  url: "https://shop.localhost:8443/orders", joined: true, signedIn: true, scopes: ["orders:read"], joinText: "",
  screenshot: "data:image/png;base64,iVBORw0KGgo=", visible: false, updated: "", problem: "",
};

class Fake extends FakeEvents implements BrowserBackend {
  s: BrowserState = base;
  shown = 0;
  state() { return Promise.resolve(this.s); }
  showWindow() { this.shown++; return Promise.resolve(); }
}

const flush = () => new Promise((r) => setTimeout(r, 0));
const ctx = (): ViewContext => ({ doc: document, setStatus: () => {}, setBadge: () => {}, show: () => {},
  empty: () => { const e = document.createElement("div"); e.className = "empty"; return e; } });

describe("browser view", () => {
  it("says the join state in words", () => {
    expect(joinLine(base)).toBe("Joined to your Session, signed in as personal with orders:read.");
    expect(joinLine({ ...base, signedIn: false })).toBe("Joined to your Session, signed out.");
    expect(joinLine({ ...base, joined: false })).toContain("signed-out visitor");
  });
  it("shows only PNG data screenshots", () => {
    expect(safeShot("https://evil.example/x.png")).toBe("");
    expect(safeShot("data:image/svg+xml;base64,AAAA")).toBe("");
    expect(safeShot(base.screenshot)).toBe(base.screenshot);
  });
  it("renders the page, updates live, and opens a window on request", async () => {
    const f = new Fake();
    const host = document.createElement("div");
    browserView(f)(host, ctx());
    await flush();
    expect(host.querySelector("#browser-url")?.textContent).toBe(base.url);
    expect(host.querySelector("#browser-shot")?.getAttribute("src")).toBe(base.screenshot);
    expect(host.querySelector("b")).toBeNull();
    f.s = { ...base, url: "https://shop.localhost:8443/account", signedIn: false };
    f.emit(EVENTS.browserChanged);
    await flush();
    expect(host.querySelector("#browser-url")?.textContent).toBe("https://shop.localhost:8443/account");
    (host.querySelector("#browser-show") as HTMLButtonElement).click();
    expect(f.shown).toBe(1);
  });
});
