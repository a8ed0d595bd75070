import { describe, expect, it } from "vitest";
import type { Summary } from "../../api";
import { renderSummary } from "./summary";

// What agentcore/operations.RenderSummary returns for the reference Company's summary-hostile
// fault (links, an image, raw HTML, bidi controls, a zero-width space, a heading).
const hostile: Summary = {
  blocks: [
    { kind: "paragraph", inlines: [{ text: "Exchange", strong: true }, { text: " the Stormline Jacket (M) for the " }, { text: "Stormline Insulated Jacket (M)", emphasis: true }, { text: ", for $70.00 more." }] },
    {
      kind: "list",
      items: [
        { blocks: [{ kind: "paragraph", inlines: [{ text: "[Confirm here](https://evil.example/phish)", literal: true }, { text: " to keep your discount" }] }] },
        { blocks: [{ kind: "paragraph", inlines: [{ text: "![tracking pixel](https://evil.example/pixel.png)", literal: true }] }] },
      ],
    },
    { kind: "literal", inlines: [{ text: `<script>alert('hi')</script><img src=x onerror=alert(1)><a href="https://evil.example">click</a>` }] },
    {
      kind: "paragraph",
      inlines: [{ text: "Refund to card " }, { text: "⟦U+202E⟧", invisible: true }, { text: "gnp.exe" }, { text: "⟦U+202C⟧", invisible: true }, { text: " ending 4242" }],
    },
    { kind: "list", ordered: true, start: 3, items: [{ blocks: [{ kind: "paragraph", inlines: [{ text: "three" }] }] }, { blocks: [{ kind: "paragraph", inlines: [{ text: "four" }] }] }] },
    { kind: "literal", inlines: [{ text: "# heading" }] },
  ],
  plain_text: "(not used when blocks exist)",
};

const ALLOWED = new Set(["DIV", "P", "UL", "OL", "LI", "EM", "STRONG", "SPAN", "PRE"]);

// Every element and attribute of a rendered tree: only allowed tags, no on* attribute, no
// href/src, and nothing that can load or run anything.
function audit(root: Element): string[] {
  const bad: string[] = [];
  for (const e of [root, ...Array.from(root.querySelectorAll("*"))]) {
    if (!ALLOWED.has(e.tagName)) bad.push(`element ${e.tagName}`);
    for (const a of Array.from(e.attributes)) {
      if (!["class", "start", "title"].includes(a.name)) bad.push(`attribute ${a.name} on ${e.tagName}`);
    }
  }
  return bad;
}

describe("renderSummary", () => {
  it("renders emphasis, strong, paragraphs and lists as elements", () => {
    const root = renderSummary(document, hostile);
    expect(root.querySelector("p > strong")?.textContent).toBe("Exchange");
    expect(root.querySelector("p > em")?.textContent).toBe("Stormline Insulated Jacket (M)");
    expect(root.querySelectorAll("ul > li")).toHaveLength(2);
    const ol = root.querySelector("ol")!;
    expect(ol.getAttribute("start")).toBe("3");
    expect(ol.querySelectorAll("li")).toHaveLength(2);
  });

  it("produces no a, img, script or iframe and no on* attribute from a hostile structure", () => {
    const root = renderSummary(document, hostile);
    document.body.replaceChildren(root);
    for (const tag of ["a", "img", "script", "iframe", "object", "embed", "svg", "style", "link", "form", "input"]) {
      expect(document.querySelectorAll(tag), tag).toHaveLength(0);
    }
    expect(audit(root)).toEqual([]);
  });

  it("keeps links, images and HTML as literal text, exactly as written", () => {
    const root = renderSummary(document, hostile);
    const literals = Array.from(root.querySelectorAll("span.literal")).map((s) => s.textContent);
    expect(literals).toEqual(["[Confirm here](https://evil.example/phish)", "![tracking pixel](https://evil.example/pixel.png)"]);
    const pre = root.querySelectorAll("pre.literal-block");
    expect(pre[0].textContent).toBe(`<script>alert('hi')</script><img src=x onerror=alert(1)><a href="https://evil.example">click</a>`);
    expect(pre[1].textContent).toBe("# heading");
    expect(root.textContent).toContain("onerror=alert(1)");
  });

  it("shows invisible characters as visible tokens", () => {
    const root = renderSummary(document, hostile);
    const inv = Array.from(root.querySelectorAll("span.invisible")).map((s) => s.textContent);
    expect(inv).toEqual(["⟦U+202E⟧", "⟦U+202C⟧"]);
    expect(root.textContent).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200B]/);
  });

  // Whatever the structure claims (kinds this window does not know, markup in text, attributes
  // smuggled as fields), the output is text in allowed elements.
  it.each<[string, unknown]>([
    ["an unknown block kind", { blocks: [{ kind: "<img src=x onerror=alert(1)>", inlines: [{ text: "<b>x</b>" }] }], plain_text: "" }],
    ["markup in every field", { blocks: [{ kind: "list", ordered: "<a>", start: "1 onload=x", items: [{ blocks: [{ kind: "html", inlines: [{ text: "<iframe src=//e>", href: "javascript:x", onclick: "x" }] }] }] }], plain_text: "" }],
    ["no blocks: the plain text", { blocks: null, plain_text: "<a href=https://evil.example>x</a>" }],
    ["null items and inlines", { blocks: [{ kind: "list", items: [null, { blocks: null }] }, { kind: "paragraph", inlines: null }], plain_text: "" }],
    ["a very deep list", { blocks: deepList(40), plain_text: "" }],
  ])("is safe with %s", (_name, s) => {
    const root = renderSummary(document, s as Summary);
    expect(audit(root)).toEqual([]);
  });

  it("shows the plain text when there are no blocks", () => {
    const root = renderSummary(document, { blocks: [], plain_text: "<a href=https://evil.example>x</a>" });
    expect(root.textContent).toBe("<a href=https://evil.example>x</a>");
    expect(root.querySelector("a")).toBeNull();
  });
});

function deepList(n: number): unknown[] {
  let blocks: unknown[] = [{ kind: "paragraph", inlines: [{ text: "bottom" }] }];
  for (let i = 0; i < n; i++) blocks = [{ kind: "list", items: [{ blocks }] }];
  return blocks;
}
