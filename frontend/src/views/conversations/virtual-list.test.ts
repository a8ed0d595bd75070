import { describe, expect, it } from "vitest";
import type { Row } from "./transcript";
import { VirtualList } from "./virtual-list";

describe("virtualized list", () => {
  it("keeps the DOM small for 10,000 rows and follows scrolling", () => {
    const scroller = document.createElement("div");
    document.body.replaceChildren(scroller);
    const v = new VirtualList(scroller, (r: Row) => { const d = document.createElement("div"); d.className = "r"; d.textContent = r.text; return d; },
      { viewport: 600, estimate: 50, overscan: 200 });
    const rows: Row[] = Array.from({ length: 10000 }, (_, i) => ({ key: `k${i}`, kind: "message", label: "", text: `row ${i}` }));
    v.setRows(rows, false);
    expect(v.rendered()).toBeLessThan(40);
    expect(scroller.querySelector(".conv-spacer")?.getAttribute("style")).toContain("500000px");
    expect(scroller.textContent).toContain("row 0");
    scroller.scrollTop = 250000;
    scroller.dispatchEvent(new Event("scroll"));
    expect(v.rendered()).toBeLessThan(40);
    const [first, last] = v.range();
    expect(first).toBeLessThanOrEqual(5000);
    expect(last).toBeGreaterThanOrEqual(5011);
    expect(scroller.textContent).toContain("row 5005");
    expect(scroller.textContent).not.toContain("row 0 ");
  });
});
