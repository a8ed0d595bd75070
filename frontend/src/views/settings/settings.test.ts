import { describe, expect, it } from "vitest";
import type { AppInfo, IdentityInfo, OperatorStatus, SettingsAPI, SettingsView, ShellAPI } from "../../api";
import { FakeEvents } from "../../api/testing";
import type { ViewContext } from "../../app";
import { RESET_CONFIRMATION } from "./reset";
import { SETTINGS_SECTIONS, settingsView } from "./index";

const goSources = import.meta.glob<string>("../../../../app/fronts/shell_settings.go", { query: "?raw", import: "default", eager: true });

const info: AppInfo = {
  name: "Poppydesk", version: "1.0", protocol: "Personal Agent Protocol 0.4", dataDir: "/d", configDir: "/c", logFile: "/l", keyring: "connected",
  demo: "", developer: "", problem: "", problemText: "", identity: "https://you.example/agent.json", identityMode: "self", operator: "", stateFile: "/d/poppydesk.sqlite",
  socket: "/run/mcp.sock", reset: false, defaultOperator: "", welcome: false, demoFromWindow: false,
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
  // The first run's gestures are not Settings': app.test.ts covers them.
  getStarted = () => Promise.reject(new Error("not in Settings"));
  restartReady = () => Promise.reject(new Error("not in Settings"));
  tryDemo = () => Promise.reject(new Error("not in Settings"));
  leaveDemo = () => Promise.reject(new Error("not in Settings"));
  operator = () => Promise.reject(new Error("not in Settings"));
  readyShown = () => Promise.resolve();
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
  // The identity as Go keeps it: an enrollment with the right token is recorded for the next
  // start; any other is refused in Go's words and changes nothing.
  enrollments: { url: string; token: string }[] = [];
  own = 0;
  id: IdentityInfo = { mode: "self", clientId: "https://you.example/agent.json", next: "self", ownClientId: "https://you.example/agent.json", fixed: false, restart: false };
  operatorStatus: OperatorStatus = {
    operator: "https://operator.example", reachable: true, inUse: false, clientId: "https://operator.example/agent.json", clientName: "Acme Agents",
    logoUri: "https://operator.example/logo.png", logo: "data:image/png;base64,iVBORw0KGgo=", signingKid: "kid-1", enrollment: "token", perHour: 200, perDay: 2000,
  };
  identity = () => Promise.resolve(this.id);
  enrollOperator = (url: string, token: string) => {
    this.enrollments.push({ url, token });
    if (token !== "ppd_enroll_right") {
      return Promise.reject(`the operator ${url} refused the enrollment token (the enrollment token is unknown, used up or expired). A token works a limited number of times and expires: check that you entered it whole, or ask the operator's administrator for a new one`);
    }
    this.id = { ...this.id, operator: url, deviceId: "dev_1", enrolled: "2026-12-01 12:00 UTC", next: "operator", nextOperator: url, restart: true };
    return Promise.resolve(this.id);
  };
  checkOperator = () => Promise.resolve(this.id.operator ? this.operatorStatus : { reachable: false, inUse: false, error: "Poppydesk is not enrolled with an operator" });
  useOwnIdentity = () => {
    this.own++;
    this.id = { ...this.id, operator: "", deviceId: "", enrolled: "", next: "self", nextOperator: "", restart: this.id.mode !== "self" };
    return Promise.resolve(this.id);
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
    expect(Array.from(host.querySelectorAll(".settings-card > h2")).map((h) => h.textContent)).toEqual(["Appearance", "Notifications", "Reports to Companies", "Developer mode", "Identity", "This installation", "Reset everything"]);
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

  it("enrolls with an operator by URL and token, then shows its name and logo and says a restart applies it", async () => {
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    const settings = new FakeSettings();
    settingsView(new FakeShell(), settings)(host, ctx());
    await flush();
    expect(host.querySelector("#identity-name")!.textContent).toBe("Your own published identity");
    expect(host.querySelector("#identity-restart")).toBeNull();
    expect(host.querySelector("#identity-own")).toBeNull();
    const url = host.querySelector<HTMLInputElement>("#identity-url")!;
    url.value = " https://operator.example ";
    url.dispatchEvent(new Event("input"));
    const token = host.querySelector<HTMLInputElement>("#identity-token")!;
    token.value = "ppd_enroll_right";
    token.dispatchEvent(new Event("input"));
    host.querySelector<HTMLButtonElement>("#identity-enroll")!.click();
    await flush();
    await flush();
    expect(settings.enrollments).toEqual([{ url: "https://operator.example", token: "ppd_enroll_right" }]);
    expect(host.querySelector("#identity-restart")!.textContent).toBe("Restart Poppydesk to sign through Acme Agents (https://operator.example).");
    expect(host.querySelector(".identity-label")!.textContent).toBe("After a restart, Companies will see");
    expect(host.querySelector("#identity-name")!.textContent).toBe("Acme Agents");
    expect(host.querySelector("#identity-shown-client-id")!.textContent).toBe("https://operator.example/agent.json");
    expect(host.querySelector<HTMLImageElement>("#identity-logo")!.getAttribute("src")).toBe("data:image/png;base64,iVBORw0KGgo=");
    expect(host.querySelector("#identity-kid")!.textContent).toBe("kid-1");
    expect(host.querySelector("#identity-device")!.textContent).toBe("dev_1, enrolled 2026-12-01 12:00 UTC");
    expect(host.querySelector<HTMLInputElement>("#identity-token")!.value).toBe("");
    expect(host.querySelector("#identity-check")).not.toBeNull();
  });

  it("says why an enrollment was refused, in Go's words, and keeps what was typed", async () => {
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    const settings = new FakeSettings();
    settingsView(new FakeShell(), settings)(host, ctx());
    await flush();
    host.querySelector<HTMLInputElement>("#identity-url")!.value = "https://operator.example";
    host.querySelector<HTMLInputElement>("#identity-token")!.value = "ppd_enroll_wrong";
    host.querySelector<HTMLButtonElement>("#identity-enroll")!.click();
    await flush();
    const msg = host.querySelector("#identity-msg")!;
    expect(msg.className).toBe("si-error");
    expect(msg.textContent).toMatch(/^Enrolling failed: the operator https:\/\/operator.example refused the enrollment token .* ask the operator's administrator for a new one$/);
    expect(host.querySelector("#identity-restart")).toBeNull();
    expect(host.querySelector<HTMLInputElement>("#identity-url")!.value).toBe("https://operator.example");
    expect(host.querySelector("#identity-name")!.textContent).toBe("Your own published identity");
  });

  it("goes back to the own identity only after a confirmation, and says a restart applies it", async () => {
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    const settings = new FakeSettings();
    settings.id = { mode: "operator", clientId: "https://operator.example/agent.json", clientName: "Acme Agents", operator: "https://operator.example", deviceId: "dev_1", next: "operator", nextOperator: "https://operator.example", ownClientId: "https://you.example/agent.json", fixed: false, restart: false };
    settingsView(new FakeShell(), settings)(host, ctx());
    await flush();
    await flush();
    expect(host.querySelector(".identity-label")!.textContent).toBe("Companies see");
    expect(host.querySelector("#identity-name")!.textContent).toBe("Acme Agents");
    host.querySelector<HTMLButtonElement>("#identity-own")!.click();
    expect(settings.own).toBe(0);
    host.querySelector<HTMLButtonElement>("#identity-own-cancel")!.click();
    expect(host.querySelector("#identity-own-confirm")).toBeNull();
    host.querySelector<HTMLButtonElement>("#identity-own")!.click();
    host.querySelector<HTMLButtonElement>("#identity-own-confirm")!.click();
    await flush();
    expect(settings.own).toBe(1);
    expect(host.querySelector("#identity-restart")!.textContent).toBe("Restart Poppydesk to sign with your own identity again.");
    expect(host.querySelector("#identity-name")!.textContent).toBe("Your own published identity");
    expect(host.querySelector("#identity-shown-client-id")!.textContent).toBe("https://you.example/agent.json");
    expect(host.querySelector("#identity-own")).toBeNull();
  });

  it("shows only a logo Go checked, as an inline image", async () => {
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    const settings = new FakeSettings();
    settings.id = { mode: "operator", clientId: "https://operator.example/agent.json", operator: "https://operator.example", next: "operator", nextOperator: "https://operator.example", fixed: false, restart: false };
    settings.operatorStatus = { ...settings.operatorStatus, logo: "https://tracker.example/pixel.png" };
    settingsView(new FakeShell(), settings)(host, ctx());
    await flush();
    expect(host.querySelector("#identity-logo")).toBeNull();
    expect(host.querySelector(".identity-card .si-logo-placeholder")!.textContent).toBe("A");
  });

  it("in the demo, says the identity is the demo's own and offers no enrollment", async () => {
    const host = document.createElement("div");
    document.body.replaceChildren(host);
    const settings = new FakeSettings();
    settings.id = { mode: "demo", clientId: "https://agent.localhost:7000/agent.json", next: "demo", fixed: false, restart: false };
    settingsView(new FakeShell(), settings)(host, ctx());
    await flush();
    expect(host.querySelector("#identity-name")!.textContent).toBe("The demo’s own identity");
    expect(host.querySelector("#identity-demo")!.textContent).toMatch(/^This is the demo’s own identity/);
    expect(host.querySelector("#identity-url")).toBeNull();
    expect(host.querySelector("#identity-enroll")).toBeNull();
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
