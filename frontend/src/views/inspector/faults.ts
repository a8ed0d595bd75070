// The demo's developer panel: the reference Company's faults, switched on and off, so each can
// be watched in the timeline. Only the demo has it (fronts.Inspector.Faults answers an error
// elsewhere).

import { type InspectorAPI, type InspectorFault, describeError } from "../../api";
import { el } from "../../dom";

export function faultsView(backend: InspectorAPI, host: HTMLElement): void {
  const note = el(
    "p",
    { class: "insp-summary" },
    "Switch a fault of the reference Company on, then use the demo: the exchanges it breaks, and their findings, appear in Exchanges.",
  );
  const grid = el("div", { class: "insp-faults", id: "insp-faults" });
  host.replaceChildren(note, grid);
  const render = (fs: readonly InspectorFault[] | null) => {
    grid.replaceChildren(
      ...(fs ?? []).map((f) => {
        const box = el("input", { type: "checkbox", id: `fault-${f.name}`, checked: f.on });
        box.addEventListener("change", () => backend.setFault(f.name, box.checked).then(render, (err) => (note.textContent = describeError(err))));
        return el("label", { class: `insp-fault ${f.group}` }, box, ` ${f.name}`, f.group === "agent" ? el("span", { class: "insp-meta" }, " (Company Agent)") : null);
      }),
    );
  };
  backend.faults().then(render, (err) => (note.textContent = describeError(err)));
}
