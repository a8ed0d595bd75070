// The Settings section: a list of independent sections, each in its own file, shown in order
// as cards with their own heading (the section title "Settings" is the shell's). A section
// renders into the card it is given; it reaches Go only through the services in its context.
// Add a section by adding its file and one entry to SETTINGS_SECTIONS.

import type { AppInfo, Preferences, SettingsAPI, ShellAPI } from "../../api";
import { describeError } from "../../api";
import type { SectionView, ViewContext } from "../../app";
import { el } from "../../dom";
import { developerSection } from "./developer";
import { identitySection } from "./identity";
import { installationSection } from "./installation";
import { notificationsSection } from "./notifications";
import { reportsSection } from "./reports";
import { resetSection } from "./reset";
import { themeSection } from "./theme";

// SettingsContext is what a section gets: the shell's and the settings' services, the view's
// context, what Go said about the installation and the window's preferences, read once for all
// sections (undefined when Go could not answer).
export interface SettingsContext {
  shell: ShellAPI;
  settings: SettingsAPI | undefined;
  view: ViewContext;
  info: AppInfo | undefined;
  prefs: Preferences | undefined;
}

export interface SettingsSection {
  // id is the card's element id ("settings-theme"); other screens link to it.
  id: string;
  title: string;
  render(body: HTMLElement, ctx: SettingsContext): void;
}

export const SETTINGS_SECTIONS: readonly SettingsSection[] = [themeSection, notificationsSection, reportsSection, developerSection, identitySection, installationSection, resetSection];

export function settingsView(shell: ShellAPI, settings?: SettingsAPI, sections: readonly SettingsSection[] = SETTINGS_SECTIONS): SectionView {
  return (host: HTMLElement, view: ViewContext) => {
    let gone = false;
    const draw = (info: AppInfo | undefined, prefs: Preferences | undefined) => {
      if (gone) return;
      const cards = sections.map((s) => {
        const body = el("div", { class: "settings-body" });
        const card = el("section", { class: "card settings-card", id: s.id, tabindex: -1, "aria-labelledby": `${s.id}-title` }, el("h2", { id: `${s.id}-title` }, s.title), body);
        try {
          s.render(body, { shell, settings, view, info, prefs });
        } catch (err) {
          body.replaceChildren(el("p", { class: "si-error" }, `This section could not be shown: ${describeError(err)}`));
        }
        return card;
      });
      host.replaceChildren(el("div", { class: "settings", id: "settings" }, ...cards));
    };
    // One render, once Go said what it knows of the installation: the sections read their own
    // settings (and Identity asks the operator) when they render, so they render once.
    host.replaceChildren(el("p", { class: "muted", id: "settings-loading" }, "Loading…"));
    const none = () => undefined;
    void Promise.all([shell.info().catch(none), shell.preferences().catch(none)]).then(([info, prefs]) => draw(info, prefs));
    return () => {
      gone = true;
    };
  };
}
