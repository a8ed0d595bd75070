// Closing the window. Ctrl+Q closes it as its close button does; either way Go decides
// (app/cli/window_wails.go): while approvals wait for the user, it asks this page first, and this
// dialog says how many wait and what closing means for them (nothing is approved; the agent is
// told the window was closed). Keep Poppydesk open is the default and Escape's answer; Close
// anyway closes.
//
// The dialog sits above everything, the approval dialog included (class modal-top, which that
// dialog leaves alone): the rest of the page is inert while it is shown.

import { type CloseRequest, EVENTS, type Subscribe } from "./api";
import { el, isTab } from "./dom";

export interface CloseBackend {
  on: Subscribe;
  // quit closes the window as its close button does (Go asks first while approvals wait).
  quit(): void;
  // confirmClose closes it although approvals wait.
  confirmClose(): void;
}

// closeWords says what closing now means for the approvals waiting.
export function closeWords(waiting: number): string {
  const what = waiting === 1 ? "1 approval is waiting" : `${waiting} approvals are waiting`;
  const them = waiting === 1 ? "it stays" : "they stay";
  return (
    `${what} for your decision. If you close Poppydesk now, nothing is approved: your agent is told that the window was closed, ` +
    `and ${them} in the Approvals list for when you open Poppydesk again (until the Company’s terms expire).`
  );
}

export function mountClosing(doc: Document, backend: CloseBackend): void {
  let shown: { root: HTMLElement; inerted: Element[]; returnTo: Element | null } | null = null;

  const hide = () => {
    if (!shown) return;
    const { root, inerted, returnTo } = shown;
    shown = null;
    root.remove();
    for (const e of inerted) e.removeAttribute("inert");
    if (returnTo instanceof HTMLElement && returnTo.isConnected) returnTo.focus();
  };

  const show = (req: CloseRequest) => {
    hide();
    const keep = el("button", { type: "button", class: "btn btn-primary", id: "close-keep" }, "Keep Poppydesk open");
    const anyway = el("button", { type: "button", class: "btn", id: "close-anyway" }, "Close anyway");
    const box = el(
      "div",
      { class: "close-dialog", role: "alertdialog", "aria-modal": "true", "aria-labelledby": "close-title", "aria-describedby": "close-text" },
      el("h2", { id: "close-title" }, "Close Poppydesk?"),
      el("p", { id: "close-text" }, closeWords(req.waiting)),
      el("div", { class: "close-actions" }, anyway, keep),
    );
    const root = el("div", { class: "close-overlay modal-top", id: "close-overlay" }, box);
    const inerted: Element[] = [];
    for (const e of Array.from(doc.body.children)) {
      if (e.hasAttribute("inert")) continue;
      e.setAttribute("inert", "");
      inerted.push(e);
    }
    shown = { root, inerted, returnTo: doc.activeElement };
    doc.body.appendChild(root);
    keep.addEventListener("click", hide);
    anyway.addEventListener("click", () => {
      hide();
      backend.confirmClose();
    });
    root.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") {
        ev.preventDefault();
        ev.stopPropagation();
        hide();
      } else if (isTab(ev)) {
        // Two buttons: Tab and Shift+Tab go from one to the other.
        ev.preventDefault();
        (doc.activeElement === keep ? anyway : keep).focus();
      }
    });
    keep.focus();
  };

  backend.on(EVENTS.windowCloseRequested, (req) => show(req ?? { waiting: 0 }));
  doc.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey && !ev.altKey && !ev.metaKey && !ev.shiftKey && ev.key.toLowerCase() === "q") {
      ev.preventDefault();
      backend.quit();
    }
  });
}
