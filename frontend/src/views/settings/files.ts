// Settings → Files: where Poppydesk keeps its data, read only.

import type { SettingsView } from "../../api";
import { el } from "../../dom";

export function filesSection(v: SettingsView): HTMLElement {
  const dl = el("dl", { class: "facts", id: "files-facts" });
  const rows: [string, string][] = [
    ["Data folder", v.files.data],
    ["State database", v.files.database],
    ["Settings folder", v.files.config],
    ["Log file", v.files.log],
    ["Model socket", v.files.socket || "not listening"],
    ["Version", v.version],
  ];
  for (const [k, val] of rows) dl.append(el("dt", {}, k), el("dd", { class: "path" }, val));
  return el("section", { class: "card settings-section", id: "settings-files", "aria-labelledby": "files-title" }, el("h2", { id: "files-title" }, "Files"), dl);
}
