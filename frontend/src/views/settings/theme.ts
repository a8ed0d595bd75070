// Settings › Appearance: the window's theme (same as the system, light or dark), kept by Go and
// applied at once.

import { describeError } from "../../api";
import { el } from "../../dom";
import { THEMES, applyTheme } from "../../theme";
import type { SettingsSection } from "./index";

export const themeSection: SettingsSection = {
  id: "settings-theme",
  title: "Appearance",
  render(body, { shell, view, prefs }) {
    const note = el("p", { class: "muted settings-note", id: "theme-note", "aria-live": "polite" });
    const group = el("fieldset", { class: "settings-choices", id: "theme-choices" }, el("legend", {}, "Theme"));
    const current = document.documentElement.dataset.themeChoice ?? "system";
    for (const t of THEMES) {
      const input = el("input", { type: "radio", name: "theme", value: t.id, id: `theme-${t.id}`, checked: t.id === current });
      input.addEventListener("change", () => {
        if (!input.checked) return;
        applyTheme(view.doc, t.id);
        shell.setTheme(t.id).then(
          () => (note.textContent = ""),
          (err) => (note.textContent = `The theme is applied now but could not be saved for the next start: ${describeError(err)}`),
        );
      });
      group.append(el("label", { class: "settings-choice", for: `theme-${t.id}` }, input, el("span", {}, t.label)));
    }
    body.append(group, note);
    const r = prefs && body.querySelector<HTMLInputElement>(`#theme-${prefs.theme}`);
    if (r) r.checked = true;
  },
};
