// The transcript's virtualized list: long conversations (10,000 events) keep only the rows in
// and near the visible window in the DOM, positioned by measured heights (estimated until
// measured), and the part the user reads stays in place while heights change.

import { el } from "../../dom";
import type { Row } from "./transcript";

export interface VirtualOptions {
  estimate?: number; // px per row until measured
  overscan?: number; // px rendered above and below the viewport
  viewport?: number; // px when the scroller has no layout (jsdom)
}

// VirtualList renders only the rows in and near the visible part of scroller. Rows are the
// transcript's by default; any row with a stable key will do (the Approvals list's earlier items).
export class VirtualList<R extends { key: string } = Row> {
  rows: R[] = [];
  private heights = new Map<string, number>();
  private offsets: number[] = [0];
  private dirty = true;
  private spacer: HTMLElement;
  private win: HTMLElement;
  private first = 0;
  private last = -1;
  private readonly estimate: number;
  private readonly overscan: number;
  private readonly fallback: number;

  constructor(
    private scroller: HTMLElement,
    private draw: (r: R) => HTMLElement,
    o: VirtualOptions = {},
  ) {
    this.estimate = o.estimate ?? 64;
    this.overscan = o.overscan ?? 400;
    this.fallback = o.viewport ?? 600;
    this.spacer = el("div", { class: "conv-spacer" });
    this.win = el("div", { class: "conv-window", role: "list" });
    this.spacer.appendChild(this.win);
    scroller.replaceChildren(this.spacer);
    scroller.addEventListener("scroll", () => this.render(), { passive: true });
    // Rows drawn before the scroller is in the page (or while it is hidden) have no height to
    // measure: it is drawn again when it gets its size, and when its width changes the rows'
    // heights (ResizeObserver; absent in jsdom, which has no layout).
    const RO = scroller.ownerDocument.defaultView?.ResizeObserver;
    if (RO) {
      let width = -1;
      const win = scroller.ownerDocument.defaultView;
      new RO(() => {
        if (scroller.clientWidth === width) return;
        width = scroller.clientWidth;
        // Drawn at the next frame: drawing changes the sizes being observed.
        win?.requestAnimationFrame(() => {
          this.dirty = true;
          this.render();
        });
      }).observe(scroller);
    }
  }

  private height(i: number): number {
    return this.heights.get(this.rows[i].key) ?? this.estimate;
  }
  private layout(): void {
    if (!this.dirty) return;
    const n = this.rows.length;
    const off = new Array<number>(n + 1);
    off[0] = 0;
    for (let i = 0; i < n; i++) off[i + 1] = off[i] + this.height(i);
    this.offsets = off;
    this.dirty = false;
    this.spacer.style.height = `${off[n]}px`;
  }
  // indexAt returns the row at pixel y (binary search of the offsets).
  private indexAt(y: number): number {
    let lo = 0;
    let hi = this.rows.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.offsets[mid] <= y) lo = mid;
      else hi = mid - 1;
    }
    return Math.max(0, lo);
  }
  atBottom(): boolean {
    const h = this.scroller.clientHeight || this.fallback;
    return this.scroller.scrollTop + h >= this.scroller.scrollHeight - 24;
  }
  setRows(rows: R[], stick: boolean): void {
    this.rows = rows;
    this.dirty = true;
    this.render();
    if (stick) this.toBottom();
  }
  toBottom(): void {
    this.layout();
    this.scroller.scrollTop = this.offsets[this.rows.length];
    this.render();
  }
  rendered(): number {
    return this.win.childElementCount;
  }
  render(): void {
    this.layout();
    const n = this.rows.length;
    if (n === 0) {
      this.win.replaceChildren();
      this.first = 0;
      this.last = -1;
      return;
    }
    const h = this.scroller.clientHeight || this.fallback;
    const top = this.scroller.scrollTop;
    const first = this.indexAt(Math.max(0, top - this.overscan));
    const last = this.indexAt(top + h + this.overscan);
    this.first = first;
    this.last = last;
    const nodes: HTMLElement[] = [];
    for (let i = first; i <= last; i++) {
      const node = this.draw(this.rows[i]);
      node.dataset.row = String(i);
      node.setAttribute("role", "listitem");
      nodes.push(node);
    }
    this.win.replaceChildren(...nodes);
    this.win.style.transform = `translateY(${this.offsets[first]}px)`;
    // Measure what was drawn; rows above the first visible row that changed height move the
    // scroll position by the same amount, so what the user reads stays in place.
    const anchor = this.indexAt(top);
    let shift = 0;
    let changed = false;
    for (let k = 0; k < nodes.length; k++) {
      const hh = nodes[k].offsetHeight;
      if (hh <= 0) continue;
      const i = first + k;
      const old = this.height(i);
      if (Math.abs(old - hh) > 0.5) {
        this.heights.set(this.rows[i].key, hh);
        changed = true;
        if (i < anchor) shift += hh - old;
      }
    }
    if (changed) {
      this.dirty = true;
      this.layout();
      this.win.style.transform = `translateY(${this.offsets[first]}px)`;
      if (shift !== 0) this.scroller.scrollTop = top + shift;
    }
  }
  range(): [number, number] {
    return [this.first, this.last];
  }
}
