// The first-run screen: shown instead of the sections that need the engine while Poppydesk cannot
// act at Companies (app.Problem). Without an identity it explains the four ways to start in
// plain words, each with its exact steps; without a usable keyring it says what is wrong and how
// to fix it. Commands are shown as text to copy, never run from here.

import type { AppInfo } from "../api";
import { el } from "../dom";

// The Settings sections of developer mode and of the identity (views/settings/).
export const DEVELOPER_SECTION_ID = "settings-developer";
export const IDENTITY_SECTION_ID = "settings-identity";

interface Way {
  id: string;
  title: string;
  text: string;
  // steps are the exact steps; a step may end with a command to copy.
  steps: { text: string; cmd?: string }[];
  link?: { label: string; href: string; focus?: string };
}

const WAYS: readonly Way[] = [
  {
    id: "firstrun-demo",
    title: "Try the demo",
    text: "See every flow with a built-in example Company, on this computer only: approvals, sign-in, conversations and the browser. Nothing from the demo is kept.",
    steps: [{ text: "Quit this window (a second Poppydesk only brings this one to the front)." }, { text: "In a terminal, run:", cmd: "poppydesk demo" }],
  },
  {
    id: "firstrun-developer",
    title: "Develop a Company",
    text: "Building your own Company? Developer mode lets Poppydesk reach your Company's hosts on this computer and trust your development certificate authority for those hosts only.",
    steps: [{ text: "Open Settings, Developer mode." }, { text: "Add your Company's host names and your CA certificate, then restart Poppydesk." }],
    link: { label: "Open Developer mode in Settings", href: "#/settings", focus: DEVELOPER_SECTION_ID },
  },
  {
    id: "firstrun-publish",
    title: "Publish an identity of your own",
    text: "Companies recognise Poppydesk by its client_id: the web address of a small public file with its name and public keys. You can publish one on a website you control.",
    steps: [
      {
        text: "Choose the address, for example https://you.example/agent.json. Quit this window, then run:",
        cmd: "poppydesk identity export --client-id https://you.example/agent.json --out agent-files",
      },
      { text: "Upload the files from agent-files so that they are served at that address (the command says where each goes)." },
      { text: "Start Poppydesk again." },
    ],
  },
  {
    id: "firstrun-operator",
    title: "Use your organisation's operator",
    text: "If your organisation runs a Poppydesk operator, it publishes one identity for everyone and signs for this computer without seeing what you do. Its administrator gives you an address and a one-time token.",
    steps: [
      { text: "Open Settings, Identity. Enter the address and token you were given, and Enroll." },
      { text: "Or, in a terminal, run:", cmd: "poppydesk operator enroll https://operator.example --token TOKEN" },
      { text: "Restart Poppydesk." },
    ],
    link: { label: "Open Identity in Settings", href: "#/settings", focus: IDENTITY_SECTION_ID },
  },
];

function stepNode(s: Way["steps"][number]): HTMLElement {
  if (!s.cmd) return el("li", {}, s.text);
  const cmd = s.cmd;
  const code = el("code", { class: "cmd" }, cmd);
  const copy = el("button", { type: "button", class: "btn btn-quiet btn-small", "data-copy": cmd }, "Copy");
  copy.addEventListener("click", () => {
    const done = (ok: boolean) => {
      copy.textContent = ok ? "Copied" : "Select and copy";
      setTimeout(() => (copy.textContent = "Copy"), 2000);
    };
    const clip = navigator.clipboard;
    if (clip?.writeText) clip.writeText(cmd).then(() => done(true), () => done(false));
    else done(false);
  });
  return el("li", { class: "cmd-step" }, s.text, el("span", { class: "cmd-row" }, code, copy));
}

// firstRun builds the screen for info's problem, or null when the engine runs.
export function firstRun(info: AppInfo | undefined, show: (id: string) => void): HTMLElement | null {
  if (!info?.problem) return null;
  if (info.problem === "no_identity") {
    const cards = WAYS.map((w) => {
      const card = el(
        "section",
        { class: "card firstrun-way", id: w.id, "aria-labelledby": `${w.id}-title` },
        el("h2", { id: `${w.id}-title` }, w.title),
        el("p", {}, w.text),
        el("ol", { class: "firstrun-steps" }, ...w.steps.map(stepNode)),
      );
      if (w.link) {
        const a = el("a", { href: w.link.href, class: "btn btn-secondary", id: `${w.id}-link` }, w.link.label);
        const focus = w.link.focus;
        a.addEventListener("click", (ev) => {
          ev.preventDefault();
          show("settings");
          const target = focus ? document.getElementById(focus) : null;
          if (target) {
            target.scrollIntoView({ block: "start" });
            target.focus?.();
          }
        });
        card.append(el("p", {}, a));
      }
      return card;
    });
    return el(
      "div",
      { class: "firstrun", id: "firstrun", "data-problem": info.problem },
      el("p", { class: "firstrun-lead", id: "firstrun-lead" }, "Poppydesk acts for you at Companies, and a Company needs to know who is asking. Poppydesk has no published identity yet, so it cannot act anywhere. Choose one way to start:"),
      el("div", { class: "firstrun-ways" }, ...cards),
    );
  }
  const locked = info.problem === "keyring_locked";
  return el(
    "div",
    { class: "firstrun", id: "firstrun", "data-problem": info.problem },
    el(
      "section",
      { class: "card firstrun-way", id: "firstrun-keyring", "aria-labelledby": "firstrun-keyring-title" },
      el("h2", { id: "firstrun-keyring-title" }, locked ? "The system keyring is locked" : "No system keyring is available"),
      el("p", {}, "Poppydesk keeps its keys and your sign-ins in the system keyring, never in a file, so it cannot act at Companies until it can reach it."),
      el(
        "ol",
        { class: "firstrun-steps" },
        ...(locked
          ? [el("li", {}, "Unlock your login keyring (in GNOME Keyring, or KeePassXC with its Secret Service integration)."), el("li", {}, "Restart Poppydesk.")]
          : [
              el("li", {}, "Start a Secret Service: GNOME Keyring, or KeePassXC with its Secret Service integration turned on."),
              el("li", {}, "Unlock it, then restart Poppydesk."),
            ]),
      ),
      el("p", { class: "muted" }, "Meanwhile you can try the demo, which keeps everything in memory: quit this window and run poppydesk demo."),
    ),
  );
}

// idleWords is the status line when no message is shown.
export function idleWords(info: AppInfo | undefined): string {
  switch (info?.problem) {
    case "no_identity":
      return "Not set up yet: choose how to start";
    case "keyring_locked":
      return "The system keyring is locked";
    case "no_keyring":
      return "No system keyring";
    default:
      return info?.reset ? "Reset: quit Poppydesk and start it again" : "Ready";
  }
}

// keyringWords is the header chip: what is true of the keyring.
export function keyringWords(keyring: string): { text: string; state: string } {
  switch (keyring) {
    case "connected":
      return { text: "Keyring connected", state: "ok" };
    case "locked":
      return { text: "Keyring locked", state: "warn" };
    case "not available":
      return { text: "No keyring", state: "warn" };
    case "demo (in memory)":
      return { text: "Demo: secrets in memory", state: "ok" };
    default:
      return { text: `Keyring: ${keyring}`, state: "" };
  }
}
