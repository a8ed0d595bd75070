// The window's frame: header with status line, navigation rail, and the current section.

import { type AppInfo, EVENTS, type Section, type ShellAPI, describeError } from "./api";
import { append, el, icon } from "./dom";
import { navKey } from "./nav";
import { SECTIONS, type SectionDef, sectionById, sectionFromHash } from "./sections";

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
    const view = views[id];
    if (view) {
      const host = el("div", { class: "view", id: `view-${id}` });
      main.replaceChildren(title, host);
      const done = view(host, { doc, setStatus, setBadge, show, empty });
      if (typeof done === "function") leave = done;
      return;
    }
    const body: Node[] = [title, empty()];
    if (id === "settings") body.push(settingsDetails());
    main.replaceChildren(...body);
  }

  function setBadge(sectionId: string, count: number): void {
    applySections([{ id: sectionId, count }]);
  }

  function settingsDetails(): HTMLElement {
    // [label, value, element id, is a file path (shown in monospace)]
    const rows: [string, string, string, boolean][] = info
      ? [
          ["Version", info.version, "info-version", false],
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

  function setStatus(text: string): void {
    status.textContent = text || "Ready";
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

  const ready = Promise.all([backend.info(), backend.sections(), backend.status()]).then(
    ([i, secs, st]) => {
      info = i;
      version.textContent = i.version;
      keyring.textContent = `Keyring: ${i.keyring}`;
      keyring.hidden = false;
      if (i.demo) doc.body.classList.add("demo");
      // Developer mode's permanent badge: the hosts and the CA, while it is on.
      const dev = doc.getElementById("dev-badge");
      if (dev && i.developer) {
        dev.textContent = i.developer;
        dev.hidden = false;
      }
      applySections(secs);
      setStatus(st);
      if (current === "settings") render(current);
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
