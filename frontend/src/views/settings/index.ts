// The Settings screen: independent sections, one file each (developer mode, identity, files),
// over app.Settings. A new section is one more file and one more entry in SECTIONS.

import { type SettingsAPI, type SettingsView, describeError } from "../../api";
import type { SectionView } from "../../app";
import { el } from "../../dom";
import { developerSection } from "./developer";
import { filesSection } from "./files";
import { identitySection } from "./identity";

type SettingsSection = (backend: SettingsAPI, v: SettingsView, rerender: (v: SettingsView) => void) => HTMLElement;

export const SECTIONS: SettingsSection[] = [developerSection, (_b, v) => identitySection(v), (_b, v) => filesSection(v)];

export function settingsView(backend: SettingsAPI): SectionView {
  return (host) => {
    const render = (v: SettingsView) => host.replaceChildren(...SECTIONS.map((s) => s(backend, v, render)));
    host.replaceChildren(el("p", {}, "Loading…"));
    backend.view().then(render, (err) => host.replaceChildren(el("p", { class: "problem" }, describeError(err))));
  };
}
