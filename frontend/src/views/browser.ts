// The Browser view (spec 6): the controlled browser's current page as a screenshot
// (refreshed live while the model browses), its URL, the join state (signed out, or signed in
// as an account with scopes), and a button to open the same Session in a visible window to
// watch. Every text is set with textContent (dom.ts); the screenshot is only ever a data: PNG.
// Nothing here decides anything or authorizes a join.

import { type BrowserAPI, type BrowserState, EVENTS, describeError } from "../api";
import { el } from "../dom";
import type { SectionView } from "../app";

// BrowserBackend is what the view needs from Go: fronts.Browser (api.browser, or a test's fake).
export type BrowserBackend = BrowserAPI;

// joinLine says the join state in plain words.
export function joinLine(s: BrowserState): string {
  if (!s.joined) return "Browsing as a signed-out visitor: this Company offers no browser join.";
  if (s.signedIn) return `Joined to your Session, signed in as ${s.account} with ${(s.scopes ?? []).join(", ") || "no scopes"}.`;
  return "Joined to your Session, signed out.";
}

// safeShot accepts only a PNG data URL (never a remote address).
export function safeShot(src: string): string {
  return /^data:image\/png;base64,[A-Za-z0-9+/=]+$/.test(src) ? src : "";
}

export function browserView(backend: BrowserBackend): SectionView {
  return (host, ctx) => {
    // The section's heading is the shell's ("Browser"); this view adds none of its own.
    const body = el("div", { class: "browser-body", "aria-live": "polite" });
    host.replaceChildren(el("section", { class: "browser", "aria-labelledby": "section-title" }, body));
    let gen = 0;
    const render = (s: BrowserState) => {
      if (!s.open && !s.problem) {
        body.replaceChildren(ctx.empty());
        return;
      }
      const button = el("button", { type: "button", class: "btn btn-secondary browser-show", id: "browser-show" }, s.visible ? "Window open" : "Watch in a window");
      if (s.visible) button.setAttribute("disabled", "");
      const note = el("p", { class: "browser-note" });
      button.addEventListener("click", () => {
        backend.showWindow().catch((err) => {
          note.textContent = "The window could not open: " + describeError(err);
        });
      });
      const parts: HTMLElement[] = [
        el("p", { class: "browser-company" }, s.companyName ? `${s.companyName} (${s.company})` : s.company),
        el("p", { class: "browser-join", id: "browser-join" }, joinLine(s)),
        el("p", { class: "browser-url", id: "browser-url" }, s.url || "—"),
      ];
      if (s.problem) parts.push(el("p", { class: "browser-problem", role: "alert" }, s.problem));
      const shot = safeShot(s.screenshot);
      if (shot) parts.push(el("img", { class: "browser-shot", id: "browser-shot", src: shot, alt: `The page ${s.url} as the controlled browser shows it` }));
      parts.push(button, note);
      body.replaceChildren(...parts);
    };
    const load = async () => {
      const mine = ++gen;
      try {
        const s = await backend.state();
        if (mine === gen) render(s);
      } catch (err) {
        if (mine !== gen) return;
        // The empty state stays, with the reason under it (as the other views do).
        const e = ctx.empty();
        e.classList.add("problem");
        const text = e.querySelector(".empty-text");
        if (text) text.textContent = "The browser's state could not be read: " + describeError(err);
        body.replaceChildren(e);
      }
    };
    const off = backend.on(EVENTS.browserChanged, () => void load());
    void load();
    return () => {
      gen++;
      off();
    };
  };
}
