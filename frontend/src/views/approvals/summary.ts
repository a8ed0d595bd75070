// The safe summary renderer (Operations extension v2, section 3 "Formatting"; docs/DESIGN.md
// invariant 4). A Company's summary reaches the window already parsed by the engine
// (agentcore/operations.RenderSummary) into a text-only structure: paragraphs, lists, and runs of
// text flagged emphasis / strong / literal / invisible. This file turns that structure into DOM
// with createElement and text nodes only. It never parses HTML (no innerHTML, outerHTML,
// insertAdjacentHTML or DOMParser), and it creates only these elements: p, ul, ol, li, em,
// strong, span, pre. Links, images and HTML therefore appear as the literal text the Company
// wrote, and nothing in a summary can load content or send the User elsewhere.

import type { Summary, SummaryBlock, SummaryInline } from "../../api";

// The deepest list nesting rendered as lists; deeper content is flattened into its item (the
// engine already caps nesting at operations.MaxListDepth).
const MAX_DEPTH = 16;

function inlineNode(doc: Document, inl: SummaryInline): Node {
  let node: Node = doc.createTextNode(String(inl.text ?? ""));
  if (inl.invisible) {
    // A token such as ⟦U+202E⟧ standing for an invisible or direction-changing character.
    const s = doc.createElement("span");
    s.className = "invisible";
    s.title = "An invisible character in the Company’s text, shown so you can see it";
    s.appendChild(node);
    node = s;
  } else if (inl.literal) {
    // Source text of something that is not rendered (a link, image, HTML, code), as written.
    const s = doc.createElement("span");
    s.className = "literal";
    s.appendChild(node);
    node = s;
  }
  if (inl.emphasis) {
    const e = doc.createElement("em");
    e.appendChild(node);
    node = e;
  }
  if (inl.strong) {
    const s = doc.createElement("strong");
    s.appendChild(node);
    node = s;
  }
  return node;
}

function appendInlines(doc: Document, parent: HTMLElement, inlines: SummaryInline[] | null | undefined): void {
  for (const inl of inlines ?? []) parent.appendChild(inlineNode(doc, inl));
}

function blockNodes(doc: Document, blocks: SummaryBlock[] | null | undefined, depth: number): Node[] {
  const out: Node[] = [];
  for (const b of blocks ?? []) {
    if (b.kind === "list" && depth < MAX_DEPTH) {
      const list = doc.createElement(b.ordered ? "ol" : "ul");
      if (b.ordered && typeof b.start === "number" && Number.isInteger(b.start) && b.start !== 1) {
        list.setAttribute("start", String(b.start));
      }
      for (const item of b.items ?? []) {
        const li = doc.createElement("li");
        for (const n of blockNodes(doc, item?.blocks, depth + 1)) li.appendChild(n);
        list.appendChild(li);
      }
      out.push(list);
    } else if (b.kind === "literal") {
      // A block the summary may not use (heading, quote, code, HTML...), shown as its source.
      const pre = doc.createElement("pre");
      pre.className = "literal-block";
      appendInlines(doc, pre, b.inlines);
      out.push(pre);
    } else if (b.kind === "list") {
      // Too deep: the items' text, one paragraph each.
      for (const item of b.items ?? []) out.push(...blockNodes(doc, item?.blocks, depth + 1));
    } else {
      // "paragraph", and any kind this window does not know, as a paragraph of text.
      const p = doc.createElement("p");
      appendInlines(doc, p, b.inlines);
      out.push(p);
    }
  }
  return out;
}

// renderSummary builds the summary's DOM inside a fresh <div class="summary">. When the
// structure has no blocks it shows plain_text as one text node.
export function renderSummary(doc: Document, s: Summary | null | undefined): HTMLElement {
  const root = doc.createElement("div");
  root.className = "summary";
  const nodes = blockNodes(doc, s?.blocks, 0);
  if (nodes.length === 0) {
    const p = doc.createElement("p");
    p.appendChild(doc.createTextNode(String(s?.plain_text ?? "")));
    nodes.push(p);
  }
  for (const n of nodes) root.appendChild(n);
  return root;
}
