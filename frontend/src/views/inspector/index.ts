// The Inspector: tabs over the exchange timeline, its flows as sequence diagrams, the findings, the model's activity (what the
// model asked through Poppydesk's MCP interface) and, in the demo, the reference Company's
// faults.

import type { ActivityAPI, InspectorAPI } from "../../api";
import type { SectionView } from "../../app";
import { el } from "../../dom";
import { activityView } from "../activity";
import { faultsView } from "./faults";
import { findingsView } from "./findings";
import { flowsView } from "./sequence";
import { timelineView } from "./timeline";

export function inspectorView(backend: InspectorAPI, activity: ActivityAPI, demo: () => boolean): SectionView {
  return (host, ctx) => {
    const tabs: [string, string][] = [
      ["exchanges", "Exchanges"],
      ["flows", "Flows"],
      ["findings", "Findings"],
      ["activity", "Model activity"],
    ];
    if (demo()) tabs.push(["faults", "Demo faults"]);
    const bar = el("div", { class: "insp-tabs", role: "tablist" });
    const panel = el("div", { class: "insp-panel", role: "tabpanel", id: "insp-panel" });
    host.replaceChildren(bar, panel);
    let leave: (() => void) | void;
    const show = (id: string) => {
      if (typeof leave === "function") leave();
      for (const b of bar.children) b.setAttribute("aria-selected", String((b as HTMLElement).dataset.tab === id));
      if (id === "exchanges") leave = timelineView(backend, panel, ctx.empty);
      else if (id === "flows") leave = flowsView(backend, panel);
      else if (id === "findings") leave = findingsView(backend, panel);
      else if (id === "faults") leave = faultsView(backend, panel);
      else leave = activityView(activity)(panel, ctx);
    };
    for (const [id, title] of tabs) {
      const b = el("button", { type: "button", role: "tab", class: "insp-tab", id: `insp-tab-${id}`, "data-tab": id }, title);
      b.addEventListener("click", () => show(id));
      bar.append(b);
    }
    show("exchanges");
    return () => {
      if (typeof leave === "function") leave();
    };
  };
}
