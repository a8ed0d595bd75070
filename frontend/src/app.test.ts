import { beforeEach, describe, expect, it, vi } from "vitest";
import { STATUS_MS, mountShell, versionWords } from "./app";
import type { AppInfo, Section, ShellAPI } from "./api";
import { FakeEvents } from "./api/testing";
import { SECTIONS } from "./sections";
// The real index.html, so the tests see the same skeleton the window loads.
import indexHTML from "../index.html?raw";

const bodyHTML = /<body>([\s\S]*)<\/body>/.exec(indexHTML)![1];

// A backend backed by plain data: the same interface the Wails bindings and the bridge serve.
class FakeBackend extends FakeEvents implements ShellAPI {
  counts: Record<string, number> = {};
  statusText = "";
  failWith: string | null = null;
  info(): Promise<AppInfo> {
    if (this.failWith) return Promise.reject(this.failWith);
    return Promise.resolve({
      name: "Poppydesk",
      version: "9.9.9",
      protocol: "Personal Agent Protocol 0.4",
      dataDir: "/data/poppydesk",
      configDir: "/config/poppydesk",
      logFile: "/state/poppydesk/poppydesk.log",
      keyring: this.keyring,
      developer: "",
      demo: this.demo,
      problem: this.problem,
      problemText: "",
      identity: "",
      identityMode: "",
      operator: "",
      stateFile: "/data/poppydesk/poppydesk.sqlite",
      socket: "",
      reset: false,
      defaultOperator: this.defaultOperator,
      welcome: this.welcome,
      demoFromWindow: this.demoFromWindow,
    });
  }
  keyring = "not connected yet";
  problem = "";
  demo = "";
  defaultOperator = "";
  welcome = false;
  demoFromWindow = false;
  // The first run's gestures, in the order the window made them.
  calls: string[] = [];
  getStartedFails = "";
  operatorStatus = {
    operator: "https://operator.example",
    reachable: true,
    inUse: true,
    clientId: "https://operator.example/agent.json",
    clientName: "Example Operator",
    logo: "data:image/png;base64,iVBORw0KGgo=",
  };
  getStarted() {
    this.calls.push("getStarted");
    return this.getStartedFails ? Promise.reject(this.getStartedFails) : Promise.resolve({ ...this.operatorStatus, inUse: false });
  }
  restartReady() {
    this.calls.push("restartReady");
    return Promise.resolve();
  }
  tryDemo() {
    this.calls.push("tryDemo");
    return Promise.resolve();
  }
  leaveDemo() {
    this.calls.push("leaveDemo");
    return Promise.resolve();
  }
  operator() {
    this.calls.push("operator");
    return Promise.resolve(this.operatorStatus);
  }
  readyShown() {
    this.calls.push("readyShown");
    return Promise.resolve();
  }
  theme = "system";
  focus: boolean[] = [];
  preferences() {
    return Promise.resolve({ theme: this.theme, notifications: true, feedbackReports: true, feedbackReportsProblem: "" });
  }
  setFeedbackReports() {
    return Promise.resolve();
  }
  setTheme(t: string) {
    this.theme = t;
    return Promise.resolve();
  }
  setNotifications() {
    return Promise.resolve();
  }
  windowFocus(f: boolean) {
    this.focus.push(f);
    return Promise.resolve();
  }
  resetEverything() {
    return Promise.resolve();
  }
  sections(): Promise<Section[]> {
    return Promise.resolve(SECTIONS.map((s) => ({ id: s.id, title: s.title, count: this.counts[s.id] ?? 0 })));
  }
  status(): Promise<string> {
    return Promise.resolve(this.statusText);
  }
  readyCalls = 0;
  frontendReady(): Promise<void> {
    this.readyCalls++;
    return Promise.resolve();
  }
}

function key(target: Element, k: string): void {
  target.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true }));
}

const flush = () => new Promise((r) => setTimeout(r, 0));

describe("the window shell", () => {
  let backend: FakeBackend;
  beforeEach(() => {
    document.body.innerHTML = bodyHTML;
    window.history.replaceState(null, "", "#");
    backend = new FakeBackend();
  });

  it("starts on Approvals with its empty state and one tab stop in the rail", async () => {
    const shell = mountShell(document, backend);
    await shell.ready;
    expect(shell.current()).toBe("approvals");
    expect(document.getElementById("section-title")!.textContent).toBe("Approvals");
    expect(document.getElementById("empty-state")!.textContent).toContain("Nothing is waiting for your approval");
    const stops = [...document.querySelectorAll("#rail a")].filter((a) => a.getAttribute("tabindex") === "0");
    expect(stops.map((a) => a.id)).toEqual(["nav-approvals"]);
    expect(document.getElementById("nav-approvals")!.getAttribute("aria-current")).toBe("page");
    expect(document.title).toBe("Approvals · Poppydesk");
  });

  it("moves with the arrow keys and opens with Enter, wrapping at the ends", async () => {
    const shell = mountShell(document, backend);
    await shell.ready;
    const first = document.getElementById("nav-approvals")!;
    first.focus();
    for (const s of SECTIONS.slice(1)) {
      key(document.activeElement!, "ArrowDown");
      expect(document.activeElement!.id).toBe(`nav-${s.id}`);
      key(document.activeElement!, "Enter");
      expect(shell.current()).toBe(s.id);
      expect(document.getElementById("empty-title")!.textContent).toBe(s.emptyTitle);
      expect(document.getElementById("empty-state")!.textContent).toContain(s.emptyText);
      expect(window.location.hash).toBe(`#/${s.id}`);
      expect(document.activeElement!.getAttribute("tabindex")).toBe("0");
    }
    key(document.activeElement!, "ArrowDown");
    expect(document.activeElement!.id).toBe("nav-approvals");
    key(document.activeElement!, "End");
    expect(document.activeElement!.id).toBe("nav-settings");
    key(document.activeElement!, "Home");
    key(document.activeElement!, " ");
    expect(shell.current()).toBe("approvals");
  });

  it("shows what Go returns: version, keyring, Settings facts and the status line", async () => {
    backend.statusText = "Demo: the reference Company is not available";
    window.history.replaceState(null, "", "#/settings");
    const shell = mountShell(document, backend);
    await shell.ready;
    expect(document.getElementById("app-version")!.textContent).toBe("9.9.9");
    expect(document.getElementById("keyring")!.textContent).toBe("Keyring: not connected yet");
    expect(document.getElementById("status")!.textContent).toBe("Demo: the reference Company is not available");
    expect(document.getElementById("info-data")!.textContent).toBe("/data/poppydesk");
    expect(document.getElementById("info-keyring")!.textContent).toBe("not connected yet");
    delete document.documentElement.dataset.theme;
    expect(backend.readyCalls).toBe(1);
  });

  it("follows status and section events from Go", async () => {
    const shell = mountShell(document, backend);
    await shell.ready;
    backend.emit("shell:status", "Signing in to shop.example");
    expect(document.getElementById("status")!.textContent).toBe("Signing in to shop.example");
    backend.counts = { approvals: 3 };
    backend.emit("shell:sections");
    await flush();
    const badge = document.querySelector("#nav-approvals .badge") as HTMLElement;
    expect(badge.hidden).toBe(false);
    expect(badge.textContent).toBe("3");
    expect(document.getElementById("nav-approvals")!.getAttribute("aria-label")).toBe("Approvals, 3 waiting");
  });

  it("renders text from Go as text, never as HTML", async () => {
    const shell = mountShell(document, backend);
    await shell.ready;
    backend.emit("shell:status", '<img src=x onerror="alert(1)"><a href="https://evil">x</a>');
    const status = document.getElementById("status")!;
    expect(status.querySelector("img, a")).toBeNull();
    expect(status.textContent).toContain("<img");
  });

  it("says so when Go does not answer", async () => {
    backend.failWith = "bridge down";
    const shell = mountShell(document, backend);
    await shell.ready;
    expect(document.getElementById("status")!.textContent).toContain("did not answer: bridge down");
    expect(document.body.dataset.ready).toBe("error");
  });

  it("the skip link moves focus to the content", async () => {
    const shell = mountShell(document, backend);
    await shell.ready;
    (document.getElementById("skip-link") as HTMLAnchorElement).click();
    expect(document.activeElement!.id).toBe("main");
  });

  it("the page declares the strict CSP and loads no remote resource", () => {
    expect(indexHTML).toContain(
      `content="default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'"`,
    );
    expect(indexHTML).not.toMatch(/https?:\/\//);
    expect(indexHTML).not.toMatch(/<script>(?!<)/);
  });
});

describe("section views", () => {
  beforeEach(() => {
    document.body.innerHTML = bodyHTML;
    window.history.replaceState(null, "", "#");
  });

  it("renders a registered view in place of the empty state, and calls its leave function", async () => {
    let left = 0;
    const shell = mountShell(document, new FakeBackend(), {
      companies: (host, ctx) => {
        host.append(document.createTextNode("companies view"));
        ctx.setBadge("approvals", 2);
        return () => left++;
      },
    });
    await shell.ready;
    shell.show("companies");
    expect(document.getElementById("view-companies")?.textContent).toBe("companies view");
    expect(document.getElementById("empty-state")).toBeNull();
    expect(document.querySelector("#nav-approvals .badge")?.textContent).toBe("2");
    shell.show("inspector");
    expect(left).toBe(1);
    expect(document.getElementById("empty-state")).not.toBeNull();
  });
});

describe("the shell speaks to people", () => {
  let backend: FakeBackend;
  beforeEach(() => {
    document.body.innerHTML = bodyHTML;
    window.history.replaceState(null, "", "#");
    backend = new FakeBackend();
  });

  it("lets a status message expire back to the idle words", async () => {
    vi.useFakeTimers();
    try {
      const shell = mountShell(document, backend);
      await shell.ready;
      backend.emit("shell:status", "Signed in to Shop");
      expect(document.getElementById("status")!.textContent).toBe("Signed in to Shop");
      vi.advanceTimersByTime(STATUS_MS + 10);
      expect(document.getElementById("status")!.textContent).toBe("Ready");
    } finally {
      vi.useRealTimers();
    }
  });

  it.each([
    ["connected", "Keyring connected", "ok"],
    ["locked", "Keyring locked", "warn"],
    ["not available", "No keyring", "warn"],
  ])("says what is true of the keyring (%s)", async (k, text, state) => {
    backend.keyring = k;
    const shell = mountShell(document, backend);
    await shell.ready;
    const chip = document.getElementById("keyring")!;
    expect(chip.textContent).toBe(text);
    expect(chip.dataset.state).toBe(state);
  });

  it("without a default operator, says what is missing and what each way to start needs", async () => {
    backend.problem = "no_identity";
    const shell = mountShell(document, backend, { approvals: () => undefined });
    await shell.ready;
    expect(document.getElementById("section-title")!.textContent).toBe("Welcome to Poppydesk");
    expect(document.getElementById("firstrun-lead")!.textContent).toContain("names no operator to get one from in one click");
    expect(document.getElementById("firstrun-get-started")).toBeNull();
    const ways = Array.from(document.querySelectorAll(".firstrun-way h2")).map((h) => h.textContent);
    expect(ways).toEqual(["Use another operator", "Publish your own identity", "Try the demo", "Develop a Company"]);
    const needs = Array.from(document.querySelectorAll(".firstrun-way")).map((c) => c.querySelector(".firstrun-needs")?.textContent ?? "");
    expect(needs.every((n) => n.startsWith("Needs: "))).toBe(true);
    expect(needs[0]).toContain("the operator’s address");
    expect(needs[1]).toContain("a website of your own");
    const cmds = Array.from(document.querySelectorAll("#firstrun code.cmd")).map((c) => c.textContent);
    expect(cmds).toEqual([
      "poppydesk operator enroll https://operator.example --token TOKEN",
      "poppydesk identity export --client-id https://you.example/agent.json --out agent-files",
    ]);
    expect(document.getElementById("status")!.textContent).toBe("Not set up yet: choose how to start");
    expect(document.getElementById("view-approvals")).toBeNull(); // the first-run screen took its place
    expect(document.getElementById("firstrun-operator-link")!.getAttribute("href")).toBe("#/settings");
    (document.getElementById("firstrun-developer-link") as HTMLAnchorElement).click();
    expect(shell.current()).toBe("settings");
  });

  it("offers Get started first when the build names an operator: one click enrolls, shows what Companies will see, and restarts", async () => {
    backend.problem = "no_identity";
    backend.defaultOperator = "https://operator.example";
    const shell = mountShell(document, backend);
    await shell.ready;
    const ways = Array.from(document.querySelectorAll(".firstrun-way h2")).map((h) => h.textContent);
    expect(ways).toEqual(["Get started", "Use another operator", "Publish your own identity", "Try the demo", "Develop a Company"]);
    expect(document.getElementById("firstrun-lead")!.textContent).toContain("one click");
    const button = document.getElementById("firstrun-get-started-button") as HTMLButtonElement;
    expect(document.activeElement).toBe(button); // Enter is the one click
    expect(document.getElementById("firstrun-get-started")!.textContent).toContain("operator.example");
    button.click();
    expect(button.disabled).toBe(true);
    expect(document.getElementById("firstrun-get-started-progress")!.textContent).toBe("Getting your identity from operator.example…");
    await flush();
    await flush();
    expect(document.getElementById("firstrun-operator-name")!.textContent).toBe("Example Operator");
    expect((document.getElementById("firstrun-operator-logo") as HTMLImageElement).getAttribute("src")).toBe(backend.operatorStatus.logo);
    expect(document.getElementById("firstrun-restarting")!.textContent).toContain("restarts with this identity");
    expect(backend.calls).toEqual(["getStarted", "restartReady"]);
  });

  it("says why Get started failed, lets the user click again, and does not restart", async () => {
    backend.problem = "no_identity";
    backend.defaultOperator = "https://operator.example";
    backend.getStartedFails = "Poppydesk could not reach the operator at https://operator.example: connection refused. Check the URL";
    const shell = mountShell(document, backend);
    await shell.ready;
    const button = document.getElementById("firstrun-get-started-button") as HTMLButtonElement;
    button.click();
    await flush();
    await flush();
    expect(document.getElementById("firstrun-get-started-error")!.textContent).toContain("could not reach the operator");
    expect(button.disabled).toBe(false);
    expect(backend.calls).toEqual(["getStarted"]);
  });

  it("starts the demo from the window, without a terminal", async () => {
    backend.problem = "no_identity";
    const shell = mountShell(document, backend);
    await shell.ready;
    expect(document.querySelector("#firstrun-demo code.cmd")).toBeNull();
    (document.getElementById("firstrun-demo-button") as HTMLButtonElement).click();
    await flush();
    expect(backend.calls).toEqual(["tryDemo"]);
    expect(document.getElementById("firstrun-demo-progress")!.textContent).toContain("restarts as the demo");
  });

  it("in a demo started from the window, says how to leave it and leaves on a click", async () => {
    backend.demo = "Reference Shop (https://auth.shop.localhost)";
    backend.demoFromWindow = true;
    const shell = mountShell(document, backend);
    await shell.ready;
    expect(document.getElementById("demo-note")!.textContent).toContain("Demo: nothing is kept.");
    (document.getElementById("demo-leave") as HTMLButtonElement).click();
    await flush();
    expect(backend.calls).toEqual(["leaveDemo"]);
    expect(document.getElementById("status")!.textContent).toContain("your own Poppydesk opens again");
  });

  it("in a demo started from a terminal, says to close the window to leave it", async () => {
    backend.demo = "Reference Shop (https://auth.shop.localhost)";
    const shell = mountShell(document, backend);
    await shell.ready;
    expect(document.getElementById("demo-note")!.textContent).toBe("Demo: nothing is kept. Close the window to leave it.");
    expect(document.getElementById("demo-leave")).toBeNull();
  });

  it("after Get started, says Poppydesk is ready with the operator's name and logo, above every section until closed", async () => {
    backend.welcome = true;
    const shell = mountShell(document, backend);
    await shell.ready;
    await flush();
    expect(document.getElementById("ready-title")!.textContent).toBe("Poppydesk is ready");
    expect(document.getElementById("ready-operator-name")!.textContent).toBe("Example Operator");
    expect((document.getElementById("ready-operator-logo") as HTMLImageElement).getAttribute("src")).toBe(backend.operatorStatus.logo);
    expect(backend.calls).toEqual(["operator", "readyShown"]);
    shell.show("companies");
    expect(document.getElementById("ready-card")).not.toBeNull();
    (document.getElementById("ready-close") as HTMLButtonElement).click();
    expect(document.getElementById("ready-card")).toBeNull();
    shell.show("approvals");
    expect(document.getElementById("ready-card")).toBeNull();
  });

  it("explains a locked keyring instead of the sections that need it", async () => {
    backend.problem = "keyring_locked";
    backend.keyring = "locked";
    window.history.replaceState(null, "", "#/companies");
    const shell = mountShell(document, backend);
    await shell.ready;
    expect(document.getElementById("firstrun-keyring-title")!.textContent).toBe("The system keyring is locked");
  });

  it("applies the saved theme at start, and tells Go when the window gains or loses the focus", async () => {
    backend.theme = "dark";
    const shell = mountShell(document, backend);
    await shell.ready;
    await flush();
    expect(document.documentElement.dataset.theme).toBe("dark");
    window.dispatchEvent(new Event("blur"));
    window.dispatchEvent(new Event("focus"));
    expect(backend.focus.slice(-2)).toEqual([false, true]);
  });
});

describe("the version", () => {
  it("reads a release as it is and a commit as a development build", () => {
    expect(versionWords("1.2.0")).toBe("1.2.0");
    expect(versionWords("2c8fe3e")).toBe("development build 2c8fe3e");
    expect(versionWords("2c8fe3e4b1a9-dirty")).toBe("development build 2c8fe3e (with local changes)");
  });
});
