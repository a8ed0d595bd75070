// The first-run screen: shown instead of the sections that need the engine while Poppydesk cannot
// act at Companies (app.Problem). Without an identity it offers, first, "Get started" when the
// build names a default operator (one click: Poppydesk enrolls with it, shows the name and logo
// Companies will see, and restarts ready to act), then the other ways to start, each with what it
// needs and its exact steps; without a default operator it says so first. "Try the demo" restarts
// Poppydesk as the demo, which offers to come back. Without a usable keyring it says what is wrong
// and how to fix it. Commands are shown as text to copy, never run from here.

import type { AppInfo, OperatorStatus, ShellAPI } from "../api";
import { describeError } from "../api";
import { el } from "../dom";

// The Settings sections of developer mode and of the identity (views/settings/).
export const DEVELOPER_SECTION_ID = "settings-developer";
export const IDENTITY_SECTION_ID = "settings-identity";

// A logo is shown only as one of the image types Go checked, inline.
export const LOGO_DATA_URL = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$/;

// operatorMark is the operator's logo as Companies show it, or its initial when there is none.
export function operatorMark(st: OperatorStatus | undefined, name: string, id: string): HTMLElement {
  const logo = st?.logo && LOGO_DATA_URL.test(st.logo) ? st.logo : "";
  return logo
    ? el("img", { class: "si-logo", id, src: logo, alt: `${name || "The operator"}’s logo` })
    : el("span", { class: "si-logo si-logo-placeholder", "aria-hidden": "true" }, (name || "?").slice(0, 1).toUpperCase());
}

// The first run's gestures: Get started, the restart it ends with, and the demo.
export type FirstRunActions = Pick<ShellAPI, "getStarted" | "restartReady" | "tryDemo">;

interface Way {
  id: string;
  title: string;
  text: string;
  // needs says what this way needs, in a line of its own.
  needs: string;
  // steps are the exact steps; a step may end with a command to copy.
  steps: { text: string; cmd?: string }[];
  link?: { label: string; href: string; focus?: string };
}

const WAYS: readonly Way[] = [
  {
    id: "firstrun-operator",
    title: "Use another operator",
    text: "An operator publishes one identity for all its users and signs for this computer without seeing what you do. Your organisation may run one.",
    needs: "Needs: the operator’s address, and an enrollment token if its administrator gives one (open operators need none).",
    steps: [
      { text: "Open Settings, Identity. Enter the address (and token), and Enroll." },
      { text: "Or, in a terminal, run:", cmd: "poppydesk operator enroll https://operator.example --token TOKEN" },
      { text: "Restart Poppydesk." },
    ],
    link: { label: "Open Identity in Settings", href: "#/settings", focus: IDENTITY_SECTION_ID },
  },
  {
    id: "firstrun-publish",
    title: "Publish your own identity",
    text: "Companies recognise Poppydesk by its client_id: the web address of a small public file with its name and public keys. You can publish one on a website you control.",
    needs: "Needs: a website of your own, served over HTTPS, where you can upload two files; and a terminal once.",
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
    id: "firstrun-developer",
    title: "Develop a Company",
    text: "Building your own Company? Developer mode lets Poppydesk reach your Company's hosts on this computer and trust your development certificate authority for those hosts only.",
    needs: "Needs: a Company you are building, running on this computer, and an identity (any of the ways here).",
    steps: [{ text: "Open Settings, Developer mode." }, { text: "Add your Company's host names and your CA certificate, then restart Poppydesk." }],
    link: { label: "Open Developer mode in Settings", href: "#/settings", focus: DEVELOPER_SECTION_ID },
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

function wayCard(w: Way, show: (id: string) => void): HTMLElement {
  const card = el(
    "section",
    { class: "card firstrun-way", id: w.id, "aria-labelledby": `${w.id}-title` },
    el("h2", { id: `${w.id}-title` }, w.title),
    el("p", {}, w.text),
    el("p", { class: "firstrun-needs", id: `${w.id}-needs` }, w.needs),
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
}

// hostOf is the operator's host name, as the card names it.
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

// getStartedCard is the one-click way: enroll with the default operator, show what Companies
// will see, restart ready to act.
function getStartedCard(operator: string, actions: FirstRunActions): HTMLElement {
  const host = hostOf(operator);
  const button = el("button", { type: "button", class: "btn btn-primary", id: "firstrun-get-started-button", autofocus: true }, "Get started");
  const progress = el("div", { class: "firstrun-progress", id: "firstrun-get-started-progress", role: "status", "aria-live": "polite" });
  button.addEventListener("click", () => {
    button.disabled = true;
    progress.replaceChildren(el("p", {}, `Getting your identity from ${host}…`));
    actions.getStarted().then(
      (st) => {
        const name = st.clientName || host;
        progress.replaceChildren(
          el(
            "div",
            { class: "identity-card", id: "firstrun-operator-card" },
            operatorMark(st, name, "firstrun-operator-logo"),
            el("div", {}, el("span", { class: "facts-under" }, "Companies will see your agent as"), el("strong", { id: "firstrun-operator-name" }, name)),
          ),
          ...(st.error ? [el("p", { class: "si-error", id: "firstrun-operator-problem" }, st.error)] : []),
          el("p", { id: "firstrun-restarting" }, "Poppydesk restarts with this identity; its window opens again in a moment."),
        );
        return actions.restartReady();
      },
    ).catch((err) => {
      button.disabled = false;
      progress.replaceChildren(el("p", { class: "si-error", id: "firstrun-get-started-error" }, describeError(err)));
    });
  });
  return el(
    "section",
    { class: "card firstrun-way firstrun-primary", id: "firstrun-get-started", "aria-labelledby": "firstrun-get-started-title" },
    el("h2", { id: "firstrun-get-started-title" }, "Get started"),
    el(
      "p",
      {},
      `One click gives Poppydesk an identity from ${host}, an operator that publishes one identity for all its users so that Companies can recognise your agent. It signs for this computer without seeing what you do or where.`,
    ),
    el("p", { class: "firstrun-needs", id: "firstrun-get-started-needs" }, "Needs: nothing else. Nothing to type, no account to make."),
    el("p", {}, button),
    progress,
  );
}

// demoCard offers the demo, which Poppydesk restarts as.
function demoCard(actions: FirstRunActions): HTMLElement {
  const button = el("button", { type: "button", class: "btn btn-secondary", id: "firstrun-demo-button" }, "Try the demo");
  const note = el("p", { id: "firstrun-demo-progress", role: "status", "aria-live": "polite" });
  button.addEventListener("click", () => {
    button.disabled = true;
    note.textContent = "Poppydesk restarts as the demo; its window opens again in a moment.";
    actions.tryDemo().catch((err) => {
      button.disabled = false;
      note.textContent = describeError(err);
    });
  });
  return el(
    "section",
    { class: "card firstrun-way", id: "firstrun-demo", "aria-labelledby": "firstrun-demo-title" },
    el("h2", { id: "firstrun-demo-title" }, "Try the demo"),
    el("p", {}, "See every flow with a built-in example Company, on this computer only: approvals, sign-in, conversations and the browser. Nothing from the demo is kept, and leaving it brings you back here as you were."),
    el("p", { class: "firstrun-needs", id: "firstrun-demo-needs" }, "Needs: nothing."),
    el("p", {}, button),
    note,
  );
}

// firstRun builds the screen for info's problem, or null when the engine runs.
export function firstRun(info: AppInfo | undefined, show: (id: string) => void, actions: FirstRunActions): HTMLElement | null {
  if (!info?.problem) return null;
  if (info.problem === "no_identity") {
    const op = info.defaultOperator;
    const lead = op
      ? "Poppydesk acts for you at Companies, and a Company needs to know who is asking. Get started gives Poppydesk an identity in one click; the other ways stay open."
      : "Poppydesk acts for you at Companies, and a Company needs to know who is asking. Poppydesk has no identity yet, and this copy of Poppydesk names no operator to get one from in one click, so it cannot act anywhere until you choose a way below. Each says what it needs.";
    const cards = [op ? getStartedCard(op, actions) : null, ...WAYS.slice(0, 2).map((w) => wayCard(w, show)), demoCard(actions), wayCard(WAYS[2], show)];
    return el(
      "div",
      { class: "firstrun", id: "firstrun", "data-problem": info.problem, "data-default-operator": op ? "yes" : "no" },
      el("p", { class: "firstrun-lead", id: "firstrun-lead" }, lead),
      el("div", { class: "firstrun-ways" }, ...cards.filter((c): c is HTMLElement => c !== null)),
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
      el("p", { class: "muted" }, "Meanwhile you can try the demo, which keeps everything in memory and touches nothing of yours."),
    ),
    demoCard(actions),
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
