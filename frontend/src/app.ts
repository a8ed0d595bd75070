// The window's frame: header with status line, navigation rail, and the current section.

import { type AppInfo, EVENTS, type Section, type ShellAPI, describeError } from "./api";
import { append, el, icon } from "./dom";
import { navKey } from "./nav";
import { SECTIONS, type SectionDef, sectionById, sectionFromHash } from "./sections";
import { applyTheme } from "./theme";
import { firstRun, idleWords, keyringWords } from "./views/firstrun";
import { demoNote, readyCard } from "./views/ready";

// STATUS_MS is how long a message stays in the status line before it gives way to the idle
// words ("Ready", or what keeps Poppydesk from acting).
export const STATUS_MS = 8000;

// The sections that need the engine: while it does not run (app.Problem), they show the
// first-run screen (views/firstrun.ts) instead of their view.
const NEEDS_ENGINE = new Set(["approvals", "companies", "signin", "conversations", "browser"]);

// versionWords shows the version a person can read: a release as it is ("1.2.0"), a build from a
// commit (what `git describe` gives where no release tag exists: "2c8fe3e", "2c8fe3e-dirty") as
// a development build.
export function versionWords(v: string): string {
  const m = /^(?:g)?([0-9a-f]{7,40})(-dirty)?$/.exec(v);
  if (!m) return v;
  return `development build ${m[1].slice(0, 7)}${m[2] ? " (with local changes)" : ""}`;
}

export interface Shell {
  current(): string;
  show(id: string): void;
  ready: Promise<void>;
}

// A section view fills the main area for one section. Views are registered per section id by
// the feature modules (frontend/src/views/) in main.ts; a section without a view shows its
// empty state. `empty` builds that empty state so a view can show it when it has nothing.
// The returned function, if any, is called when the user leaves the section.
export interface ViewContext {
  doc: Document;
  setStatus(text: string): void;
  setBadge(sectionId: string, count: number): void;
  show(id: string): void;
  empty(): HTMLElement;
}
export type SectionView = (host: HTMLElement, ctx: ViewContext) => void | (() => void);

export function mountShell(doc: Document, backend: ShellAPI, views: Record<string, SectionView> = {}): Shell {
  const win = doc.defaultView as Window;
  const rail = doc.getElementById("rail") as HTMLElement;
  const main = doc.getElementById("main") as HTMLElement;
  const status = doc.getElementById("status") as HTMLElement;
  const version = doc.getElementById("app-version") as HTMLElement;
  const skip = doc.getElementById("skip-link") as HTMLAnchorElement;
  const keyring = doc.getElementById("keyring") as HTMLElement;

  let info: AppInfo | undefined;
  let current = "";
  let leave: (() => void) | undefined;
  // The card that says Poppydesk is ready after Get started, above every section until closed.
  let readyNode: HTMLElement | undefined;

  // Navigation rail.
  const links: HTMLAnchorElement[] = [];
  const badges = new Map<string, HTMLElement>();
  const list = el("ul", { class: "rail-list" });
  for (const s of SECTIONS) {
    const badge = el("span", { class: "badge", hidden: true });
    badges.set(s.id, badge);
    const a = el(
      "a",
      { href: `#/${s.id}`, id: `nav-${s.id}`, class: "rail-link", "data-section": s.id, tabindex: -1 },
      icon(s.icon),
      el("span", { class: "rail-label" }, s.title),
      badge,
    );
    links.push(a);
    list.appendChild(el("li", {}, a));
  }
  rail.replaceChildren(list);

  rail.addEventListener("keydown", (ev) => {
    const i = links.indexOf(doc.activeElement as HTMLAnchorElement);
    if (i < 0 || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const move = navKey(ev.key, i, links.length);
    if (!move) return;
    ev.preventDefault();
    if (move.kind === "focus") {
      setTabStop(move.index);
      links[move.index].focus();
    } else {
      show(links[move.index].dataset.section as string);
    }
  });
  rail.addEventListener("click", (ev) => {
    const a = (ev.target as Element).closest("a.rail-link") as HTMLAnchorElement | null;
    if (!a) return;
    ev.preventDefault();
    show(a.dataset.section as string);
  });

  function setTabStop(index: number): void {
    links.forEach((l, j) => l.setAttribute("tabindex", j === index ? "0" : "-1"));
  }

  skip.addEventListener("click", (ev) => {
    ev.preventDefault();
    main.focus();
  });

  function show(id: string): void {
    if (!sectionById(id)) return;
    if (win.location.hash !== `#/${id}`) {
      win.history.replaceState(null, "", `#/${id}`);
    }
    render(id);
  }

  function render(id: string): void {
    const def = sectionById(id) as SectionDef;
    current = id;
    links.forEach((l, j) => {
      if (l.dataset.section === id) {
        l.setAttribute("aria-current", "page");
        setTabStop(j);
      } else {
        l.removeAttribute("aria-current");
      }
    });
    doc.title = `${def.title} · Poppydesk`;
    const empty = (): HTMLElement =>
      el(
        "section",
        { class: "empty", id: "empty-state", "data-section": id, "aria-labelledby": "empty-title" },
        el("div", { class: "empty-icon" }, icon(def.icon)),
        el("h2", { id: "empty-title", class: "empty-title" }, def.emptyTitle),
        el("p", { class: "empty-text" }, def.emptyText),
      );
    if (leave) {
      leave();
      leave = undefined;
    }
    const title = el("h1", { id: "section-title", class: "section-title" }, def.title);
    const guide = NEEDS_ENGINE.has(id) ? firstRun(info, show, backend) : null;
    if (guide) {
      title.textContent = info?.problem === "no_identity" ? "Welcome to Poppydesk" : def.title;
      main.replaceChildren(title, guide);
      (doc.getElementById("firstrun-get-started-button") as HTMLButtonElement | null)?.focus();
      return;
    }
    const view = views[id];
    if (view) {
      const host = el("div", { class: "view", id: `view-${id}` });
      main.replaceChildren(title, host);
      if (readyNode) main.prepend(readyNode);
      const done = view(host, { doc, setStatus, setBadge, show, empty });
      if (typeof done === "function") leave = done;
      return;
    }
    const body: Node[] = [title, empty()];
    if (id === "settings") body.push(settingsDetails());
    main.replaceChildren(...body);
    if (readyNode) main.prepend(readyNode);
  }

  function setBadge(sectionId: string, count: number): void {
    applySections([{ id: sectionId, count }]);
  }

  function settingsDetails(): HTMLElement {
    // [label, value, element id, is a file path (shown in monospace)]
    const rows: [string, string, string, boolean][] = info
      ? [
          ["Version", versionWords(info.version), "info-version", false],
          ["Protocol", info.protocol, "info-protocol", false],
          ["Data folder", info.dataDir, "info-data", true],
          ["Settings folder", info.configDir, "info-config", true],
          ["Log file", info.logFile, "info-log", true],
          ["System keyring", info.keyring, "info-keyring", false],
        ]
      : [];
    if (info?.demo) rows.push(["Demo", info.demo, "info-demo", false]);
    const dl = el("dl", { class: "facts", id: "app-facts" });
    for (const [k, v, id, path] of rows) {
      append(dl, [el("dt", {}, k), el("dd", { id, class: path ? "path" : undefined }, v)]);
    }
    if (!info) append(dl, [el("dt", {}, "Application"), el("dd", {}, "Loading…")]);
    return el("section", { class: "card", "aria-labelledby": "facts-title" }, el("h2", { id: "facts-title" }, "This installation"), dl);
  }

  // setStatus shows a message for STATUS_MS, then the idle words come back.
  let statusTimer: ReturnType<typeof setTimeout> | undefined;
  function setStatus(text: string): void {
    if (statusTimer !== undefined) clearTimeout(statusTimer);
    statusTimer = undefined;
    status.textContent = text || idleWords(info);
    if (text) statusTimer = setTimeout(() => (status.textContent = idleWords(info)), STATUS_MS);
  }

  function applySections(list: readonly Pick<Section, "id" | "count">[] | null): void {
    for (const s of list ?? []) {
      const b = badges.get(s.id);
      const link = doc.getElementById(`nav-${s.id}`);
      if (!b || !link) continue;
      const def = sectionById(s.id) as SectionDef;
      if (s.count > 0) {
        b.textContent = String(s.count);
        b.hidden = false;
        link.setAttribute("aria-label", `${def.title}, ${s.count} waiting`);
      } else {
        b.textContent = "";
        b.hidden = true;
        link.removeAttribute("aria-label");
      }
    }
  }

  win.addEventListener("hashchange", () => render(sectionFromHash(win.location.hash)));
  show(sectionFromHash(win.location.hash));

  backend.on(EVENTS.shellStatus, (text) => setStatus(String(text ?? "")));
  backend.on(EVENTS.shellSections, () => {
    backend.sections().then(applySections, (err) => setStatus(`Could not read the sections: ${describeError(err)}`));
  });

  // The theme follows the system until the saved one arrives.
  applyTheme(doc, "system");
  backend.preferences().then(
    (p) => applyTheme(doc, p.theme),
    () => undefined,
  );

  // Go shows desktop notifications only while the window is not focused (Wails v2 has no focus
  // event, so the window says so itself).
  const tellFocus = (focused: boolean) => void backend.windowFocus(focused).catch(() => undefined);
  const focusChanged = () => tellFocus(doc.hasFocus());
  win.addEventListener("focus", () => tellFocus(true));
  win.addEventListener("blur", () => tellFocus(false));

  const ready = Promise.all([backend.info(), backend.sections(), backend.status()]).then(
    ([i, secs, st]) => {
      info = i;
      version.textContent = versionWords(i.version);
      version.title = `Version ${i.version}`;
      const chip = keyringWords(i.keyring);
      keyring.textContent = chip.text;
      keyring.dataset.state = chip.state;
      keyring.title = `System keyring: ${i.keyring}`;
      keyring.hidden = false;
      if (i.demo) {
        doc.body.classList.add("demo");
        doc.getElementById("demo-note")?.remove();
        keyring.after(demoNote(backend, i, setStatus));
      }
      if (i.welcome && !i.problem) {
        readyNode = readyCard(backend, i, () => {
          readyNode?.remove();
          readyNode = undefined;
        });
        main.prepend(readyNode);
      }
      // Developer mode's permanent badge: the hosts and the CA, while it is on.
      const dev = doc.getElementById("dev-badge");
      if (dev && i.developer) {
        dev.textContent = i.developer;
        dev.hidden = false;
      }
      applySections(secs);
      setStatus(st);
      focusChanged();
      if (current === "settings" || (i.problem && NEEDS_ENGINE.has(current))) render(current);
      doc.body.dataset.ready = "true";
      backend.frontendReady().catch((err) => console.error("reporting readiness failed", err));
    },
    (err) => {
      setStatus(`Poppydesk’s core did not answer: ${describeError(err)}. Restart Poppydesk; if it happens again, see the log file.`);
      doc.body.dataset.ready = "error";
    },
  );

  return { current: () => current, show, ready };
}
