// Tiny DOM helpers. Text is always set with textContent, never parsed as HTML: whatever a
// Company writes is shown as literal text (spec 10.1; docs/DESIGN.md invariant 4).

type Attrs = Record<string, string | number | boolean | undefined>;
type Child = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    node.setAttribute(k, v === true ? "" : String(v));
  }
  append(node, children);
  return node;
}

export function append(parent: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
}

const SVG = "http://www.w3.org/2000/svg";

// icon draws a 20×20 stroked icon from path data (constants in this bundle, never input).
export function icon(paths: readonly string[]): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "20");
  svg.setAttribute("height", "20");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.setAttribute("class", "icon");
  for (const d of paths) {
    const p = document.createElementNS(SVG, "path");
    p.setAttribute("d", d);
    svg.appendChild(p);
  }
  return svg;
}

// isTab says whether a key event is Tab or Shift+Tab. WebKitGTK reports Shift+Tab (the
// ISO_Left_Tab key) with the key "Unidentified" and the key code 9.
export function isTab(ev: KeyboardEvent): boolean {
  return ev.key === "Tab" || (ev.key === "Unidentified" && ev.keyCode === 9);
}
