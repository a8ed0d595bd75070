import { describe, expect, it } from "vitest";
import type { AppInfo, SettingsAPI, SettingsView, ShellAPI } from "../../api";
import { FakeEvents } from "../../api/testing";
import type { ViewContext } from "../../app";
import { RESET_CONFIRMATION } from "./reset";
import { SETTINGS_SECTIONS, settingsView } from "./index";

const goSources = import.meta.glob<string>("../../../../app/shell_settings.go", { query: "?raw", import: "default", eager: true });

const info: AppInfo = {
  name: "Poppydesk", version: "1.0", protocol: "Personal Agent Protocol 0.4", dataDir: "/d", configDir: "/c", logFile: "/l", keyring: "connected",
  demo: "", developer: "", problem: "", problemText: "", identity: "https://you.example/agent.json", identityMode: "self", operator: "", stateFile: "/d/poppydesk.sqlite",
  socket: "/run/mcp.sock", reset: false,
};

class FakeShell extends FakeEvents implements ShellAPI {
  theme = "system";
  notifications = true;
  feedbackReports = true;
  resets: string[] = [];
  info = () => Promise.resolve(info);
  sections = () => Promise.resolve([]);
  status = () => Promise.resolve("");
  frontendReady = () => Promise.resolve();
  preferences = () => Promise.resolve({ theme: this.theme, notifications: this.notifications, feedbackReports: this.feedbackReports, feedbackReportsProblem: "" });
  setFeedbackReports = (on: boolean) => {
    this.feedbackReports = on;
    return Promise.resolve();
  };
  setTheme = (t: string) => {
    this.theme = t;
    return Promise.resolve();
  };
  setNotifications = (on: boolean) => {
    this.notifications = on;
    return Promise.resolve();
  };
  windowFocus = () => Promise.resolve();
  resetEverything = (c: string) => {
    this.resets.push(c);
    return Promise.resolve();
  };
}

// FakeSettings keeps developer mode as Go would: saved for the next start, applied on restart.
class FakeSettings extends FakeEvents implements SettingsAPI {
  saved: { companies: string[]; ca: string }[] = [];
  v: SettingsView = {
    developer: { active: false, companies: [], hosts: [], ca_file: "", client_id: "", agent_ca_file: "", saved_companies: [], saved_ca_file: "", restart_needed: false, problem: "", demo: false },
    identity: { client_id: "", keyring: "connected", problem: "" },
    files: { data: "/d", config: "/c", state: "/s", database: "/d/poppydesk.sqlite", log: "/l", socket: "" },
    version: "1.0",
  };
  view = () => Promise.resolve(this.v);
  setDeveloper = (companies: string[], ca: string) => {
    this.saved.push({ companies, ca });
    this.v = { ...this.v, developer: { ...this.v.developer, saved_companies: companies, saved_ca_file: ca, restart_needed: true } };
    return Promise.resolve(this.v);
  };
  disableDeveloper = () => {
    this.v = { ...this.v, developer: { ...this.v.developer, saved_companies: [], saved_ca_file: "", restart_needed: this.v.developer.active } };
    return Promise.resolve(this.v);
  };
}

const flush = () => new Promise((r) => setTimeout(r, 0));
const ctx = (): ViewContext => ({ doc: document, setStatus: () => {}, setBadge: () => {}, show: () => {}, empty: () => document.createElement("div") });

describe("Settings", () => {
  it("lists its sections as cards with their own headings, in order", async () => {
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    settingsView(new FakeShell())(host, ctx());
    await flush();
    expect(Array.from(host.querySelectorAll(".settings-card")).map((c) => c.id)).toEqual(SETTINGS_SECTIONS.map((s) => s.id));
    expect(Array.from(host.querySelectorAll(".settings-card > h2")).map((h) => h.textContent)).toEqual(["Appearance", "Notifications", "Reports to Companies", "Developer mode", "This installation", "Reset everything"]);
    expect(host.querySelector("#info-identity")!.textContent).toBe("Your own published identityhttps://you.example/agent.json");
    expect(host.querySelector("#info-keyring")!.textContent).toMatch(/^Connected/);
  });

  it("saves and applies the theme, and turns notifications off", async () => {
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    const shell = new FakeShell();
    settingsView(shell)(host, ctx());
    await flush();
    const dark = host.querySelector<HTMLInputElement>("#theme-dark")!;
    dark.checked = true;
    dark.dispatchEvent(new Event("change"));
    expect(shell.theme).toBe("dark");
    expect(document.documentElement.dataset.theme).toBe("dark");
    const system = host.querySelector<HTMLInputElement>("#theme-system")!;
    system.checked = true;
    system.dispatchEvent(new Event("change"));
    expect(document.documentElement.dataset.theme).toBeUndefined();
    const box = host.querySelector<HTMLInputElement>("#notifications-on")!;
    box.checked = false;
    box.dispatchEvent(new Event("change"));
    await flush();
    expect(shell.notifications).toBe(false);
    const reports = host.querySelector<HTMLInputElement>("#reports-on")!;
    expect(reports.checked).toBe(true);
    reports.checked = false;
    reports.dispatchEvent(new Event("change"));
    await flush();
    expect(shell.feedbackReports).toBe(false);
    expect(host.querySelector("#reports-note")!.textContent).toMatch(/^Reports are off/);
  });

  it("resets everything only after the confirmation, with Go's confirmation words", async () => {
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    const shell = new FakeShell();
    settingsView(shell)(host, ctx());
    await flush();
    host.querySelector<HTMLButtonElement>("#reset-start")!.click();
    expect(shell.resets).toEqual([]);
    host.querySelector<HTMLButtonElement>("#reset-cancel")!.click();
    expect(host.querySelector("#reset-confirm")).toBeNull();
    host.querySelector<HTMLButtonElement>("#reset-start")!.click();
    host.querySelector<HTMLButtonElement>("#reset-confirm")!.click();
    await flush();
    expect(shell.resets).toEqual([RESET_CONFIRMATION]);
    expect(host.querySelector("#reset-note")!.textContent).toMatch(/Quit Poppydesk and start it again/);
    const src = Object.values(goSources)[0];
    expect(src).toContain(`const ResetConfirmation = "${RESET_CONFIRMATION}"`);
  });

  it("saves developer mode for the next start and says a restart applies it", async () => {
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    const settings = new FakeSettings();
    settingsView(new FakeShell(), settings)(host, ctx());
    await flush();
    expect(host.querySelector("#dev-status")!.textContent).toBe("Off");
    host.querySelector<HTMLInputElement>("#dev-companies")!.value = "shop.localhost:8443, api.shop.localhost:8443";
    host.querySelector<HTMLInputElement>("#dev-ca")!.value = " /home/me/rootCA.pem ";
    host.querySelector<HTMLButtonElement>("#dev-save")!.click();
    await flush();
    expect(settings.saved).toEqual([{ companies: ["shop.localhost:8443", "api.shop.localhost:8443"], ca: "/home/me/rootCA.pem" }]);
    expect(host.querySelector("#dev-msg")!.textContent).toMatch(/Restart Poppydesk to apply developer mode/);
    expect(host.querySelector<HTMLInputElement>("#dev-companies")!.value).toBe("shop.localhost:8443, api.shop.localhost:8443");
  });

  it("shows the running developer mode with the client_id to register", async () => {
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    const settings = new FakeSettings();
    settings.v.developer = { ...settings.v.developer, active: true, companies: ["shop.localhost:8443"], hosts: ["shop.localhost"], ca_file: "/ca.pem", client_id: "https://127.0.0.1:7000/agent.json", agent_ca_file: "/agent-ca.pem" };
    settingsView(new FakeShell(), settings)(host, ctx());
    await flush();
    expect(host.querySelector("#dev-status")!.textContent).toBe("On");
    expect(host.querySelector("#dev-client-id")!.textContent).toBe("https://127.0.0.1:7000/agent.json");
    expect(host.querySelector("#dev-agent-ca")!.textContent).toBe("/agent-ca.pem");
  });
});
