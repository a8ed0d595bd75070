// Flows as sequence diagrams: the timeline grouped by Go into flows (a sign-in, an approval, a
// conversation, a browser join, a tool call of the model), and the chosen one drawn as plain
// SVG — one lifeline per participant (Poppydesk, each host of the Company it reached, the
// Company fetching Poppydesk's client metadata), one request arrow and one dashed answer arrow
// per recorded exchange, in the order recorded. Each exchange's arrows are one focusable group
// that opens the exchange below the diagram. Text is set with textContent only.

import { type InspectorAPI, type InspectorFlow, EVENTS, describeError } from "../../api";
import { el } from "../../dom";
import { timeOf } from "../activity";
import { entryView } from "./entry";
import { statusClass } from "./timeline";

const SVG = "http://www.w3.org/2000/svg";
const LANE = 190; // px between lifelines
const TOP = 44; // px above the first arrow
const STEP = 46; // px per exchange (request and answer)

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
}

// diagram draws flow f; open is called with an exchange's ID when its arrows are chosen.
export function diagram(f: InspectorFlow, open: (id: number) => void): SVGSVGElement {
  const lanes = f.lanes ?? [];
  const arrows = f.arrows ?? [];
  const width = Math.max(lanes.length, 2) * LANE;
  const height = TOP + arrows.length * STEP + 16;
  const root = svg("svg", { class: "seq", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `Sequence diagram: ${f.title}` });
  const defs = svg("defs", {});
  const head = svg("marker", { id: "seq-head", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  head.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "currentColor" }));
  defs.append(head);
  root.append(defs);
  const x = (lane: number) => LANE / 2 + lane * LANE;
  lanes.forEach((name, i) => {
    root.append(svg("line", { class: "seq-life", x1: x(i), y1: 26, x2: x(i), y2: height - 4 }));
    const label = svg("text", { class: "seq-lane", x: x(i), y: 16, "text-anchor": "middle" }, name.length > 30 ? `${name.slice(0, 29)}…` : name);
    const g = svg("g", {});
    g.append(svg("title", {}, name), label);
    root.append(g);
  });
  arrows.forEach((a, i) => {
    const y = TOP + i * STEP;
    const g = svg("g", { class: `seq-exchange ${a.error ? "problem" : "ok"}`, "data-exchange": a.exchange, tabindex: 0, role: "button" });
    g.setAttribute("aria-label", `Exchange ${a.exchange}: ${a.label}, HTTP ${a.status || "no answer"}`);
    const [x1, x2] = [x(a.from), x(a.to)];
    const mid = (x1 + x2) / 2;
    g.append(
      svg("line", { class: "seq-req", x1, y1: y, x2, y2: y, "marker-end": "url(#seq-head)" }),
      svg("text", { class: "seq-label", x: mid, y: y - 5, "text-anchor": "middle" }, a.label.length > 44 ? `${a.label.slice(0, 43)}…` : a.label),
      svg("line", { class: "seq-resp", x1: x2, y1: y + 18, x2: x1, y2: y + 18, "marker-end": "url(#seq-head)" }),
      svg("text", { class: `seq-status ${statusClass(a)}`, x: mid, y: y + 14, "text-anchor": "middle" }, a.status ? String(a.status) : "no answer"),
      svg("title", {}, `#${a.exchange} · ${timeOf(a.at)} · ${a.label} · ${a.status || "no answer"}`),
    );
    g.addEventListener("click", () => open(a.exchange));
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        open(a.exchange);
      }
    });
    root.append(g);
  });
  return root;
}

// flowsView lists the flows, newest first, and draws the chosen one.
export function flowsView(backend: Pick<InspectorAPI, "flows" | "entry" | "on">, host: HTMLElement): () => void {
  const list = el("ol", { class: "insp-list seq-flows", id: "seq-flows" });
  const summary = el("p", { class: "insp-summary", id: "seq-summary" });
  const drawing = el("div", { class: "seq-drawing", id: "seq-drawing" });
  const detail = el("div", { class: "insp-detail", id: "seq-detail" });
  host.replaceChildren(summary, el("div", { class: "insp-split" }, list, el("div", {}, drawing, detail)));
  let chosen = "";
  let gone = false;
  const openExchange = (id: number) =>
    backend.entry(id).then(
      (e) => detail.replaceChildren(entryView(e)),
      (err) => detail.replaceChildren(el("p", { class: "problem" }, describeError(err))),
    );
  const draw = (f: InspectorFlow) => {
    chosen = f.id;
    for (const b of list.querySelectorAll(".insp-open[aria-current]")) b.removeAttribute("aria-current");
    list.querySelector(`[data-flow="${CSS.escape(f.id)}"]`)?.setAttribute("aria-current", "true");
    drawing.replaceChildren(el("h3", {}, f.title), diagram(f, openExchange));
  };
  const read = () =>
    backend.flows(50).then(
      (flows) => {
        if (gone) return;
        const fs = flows ?? [];
        summary.textContent =
          fs.length === 0
            ? "No flow yet. Sign in, call an API or converse, and each action’s exchanges appear here as a sequence diagram."
            : `${fs.length} flow${fs.length === 1 ? "" : "s"}, newest first. Choose one to draw it; choose an arrow to open its exchange.`;
        list.replaceChildren(
          ...fs.map((f) => {
            const n = (f.arrows ?? []).length;
            const b = el(
              "button",
              { type: "button", class: "insp-open seq-flow-open", "data-flow": f.id },
              el("span", { class: "insp-url" }, f.title),
              el("span", { class: "insp-meta" }, `${timeOf(f.at)} · ${f.kind} · ${n} exchange${n === 1 ? "" : "s"}`),
            );
            b.addEventListener("click", () => draw(f));
            return el("li", { class: "insp-row" }, b);
          }),
        );
        const again = fs.find((f) => f.id === chosen);
        if (again) draw(again);
      },
      (err) => {
        if (!gone) summary.textContent = `The flows could not be read: ${describeError(err)}`;
      },
    );
  let pending = false;
  const off = backend.on(EVENTS.inspectorChanged, () => {
    if (pending) return;
    pending = true;
    setTimeout(() => ((pending = false), read()), 500);
  });
  read();
  return () => {
    gone = true;
    if (typeof off === "function") off();
  };
}
