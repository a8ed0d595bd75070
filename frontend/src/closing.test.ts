import { beforeEach, describe, expect, it } from "vitest";
import { EVENTS } from "./api";
import { FakeEvents } from "./api/testing";
import { closeWords, mountClosing } from "./closing";

class FakeClosing extends FakeEvents {
  quits = 0;
  confirmed = 0;
  quit() {
    this.quits++;
  }
  confirmClose() {
    this.confirmed++;
  }
}

const key = (target: Element, k: string, opts: KeyboardEventInit = {}) =>
  target.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true, ...opts }));

describe("closing the window", () => {
  let backend: FakeClosing;
  beforeEach(() => {
    document.body.innerHTML = '<a id="skip" href="#main">Skip</a><div id="app"><button id="here">here</button></div>';
    backend = new FakeClosing();
    mountClosing(document, backend);
  });

  it("quits on Ctrl+Q as the close button does", () => {
    key(document.body, "q", { ctrlKey: true });
    expect(backend.quits).toBe(1);
    key(document.body, "q");
    expect(backend.quits).toBe(1);
  });

  it("says how many approvals wait and what closing does to them", () => {
    expect(closeWords(1)).toMatch(/^1 approval is waiting for your decision\. .*nothing is approved.*it stays in the Approvals list/);
    expect(closeWords(2)).toMatch(/^2 approvals are waiting .*they stay/);
  });

  it("asks before closing, keeps the window on Escape, and closes on Close anyway", () => {
    (document.getElementById("here") as HTMLElement).focus();
    backend.emit(EVENTS.windowCloseRequested, { waiting: 2 });
    const box = document.querySelector('[role="alertdialog"]') as HTMLElement;
    expect(box.getAttribute("aria-labelledby")).toBe("close-title");
    expect(document.getElementById("close-text")?.textContent).toBe(closeWords(2));
    expect(document.activeElement?.id).toBe("close-keep");
    expect(document.getElementById("app")?.hasAttribute("inert")).toBe(true);
    expect(document.getElementById("skip")?.hasAttribute("inert")).toBe(true);
    key(document.activeElement as Element, "Escape");
    expect(document.getElementById("close-overlay")).toBeNull();
    expect(document.getElementById("app")?.hasAttribute("inert")).toBe(false);
    expect(document.activeElement?.id).toBe("here");
    expect(backend.confirmed).toBe(0);

    backend.emit(EVENTS.windowCloseRequested, { waiting: 1 });
    (document.getElementById("close-anyway") as HTMLElement).click();
    expect(backend.confirmed).toBe(1);
    expect(document.getElementById("close-overlay")).toBeNull();
  });
});
