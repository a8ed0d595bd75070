// The findings list: every rule a Company broke that Poppydesk noticed, newest first.

import { type InspectorAPI, EVENTS, describeError } from "../../api";
import { el } from "../../dom";
import { findingView } from "./entry";

export function findingsView(backend: InspectorAPI, host: HTMLElement): () => void {
  const list = el("ul", { class: "insp-findings", id: "insp-findings-list" });
  const note = el("p", { class: "insp-summary" });
  host.replaceChildren(note, list);
  const load = () =>
    backend.findings().then(
      (fs) => {
        const all = fs ?? [];
        note.textContent =
          all.length === 0
            ? "No findings yet. When a Company breaks a rule of the specification while Poppydesk works with it, the rule, its section and how to fix it appear here."
            : `${all.length} finding${all.length === 1 ? "" : "s"}.`;
        list.replaceChildren(
          ...all.map((f) => {
            const li = findingView(f);
            li.prepend(el("p", { class: "insp-meta" }, `${f.company ?? ""} ${f.url ?? ""}`.trim()));
            return li;
          }),
        );
      },
      (err) => (note.textContent = `The findings could not be read: ${describeError(err)}`),
    );
  const off = backend.on(EVENTS.inspectorChanged, load);
  load();
  return () => {
    if (typeof off === "function") off();
  };
}
