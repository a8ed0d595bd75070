// The window once Poppydesk is ready after Get started: the identity it signs with, by the name
// and logo Companies see (read from the operator, as Companies read it), and the next step,
// connecting an assistant. The card stays above every section until the user closes it.
// Also the demo's header note: that this is the demo, and how to leave it.

import type { AppInfo, ShellAPI } from "../api";
import { describeError } from "../api";
import { el } from "../dom";
import { operatorMark } from "./firstrun";

export function readyCard(shell: Pick<ShellAPI, "operator" | "readyShown">, info: AppInfo, close: () => void): HTMLElement {
  const who = el("div", { class: "identity-card", id: "ready-operator" }, el("p", { class: "muted" }, "Asking the operator what Companies see…"));
  const done = el("button", { type: "button", class: "btn btn-quiet btn-small", id: "ready-close" }, "Close");
  done.addEventListener("click", close);
  const card = el(
    "section",
    { class: "card ready-card", id: "ready-card", "aria-labelledby": "ready-title" },
    el("h2", { id: "ready-title" }, "Poppydesk is ready"),
    who,
    el(
      "p",
      { id: "ready-next" },
      "Poppydesk can now act for you at any Company that accepts Personal Agents. Connect your assistant (any MCP client) with ",
      el("code", { class: "cmd" }, "poppydesk mcp setup"),
      "; it asks you here before anything a Company wants approved.",
    ),
    el("p", {}, done),
  );
  shell.operator().then(
    (st) => {
      const name = st.clientName || info.operator;
      who.replaceChildren(
        operatorMark(st, name, "ready-operator-logo"),
        el(
          "div",
          {},
          el("span", { class: "facts-under" }, "Companies see your agent as"),
          el("strong", { id: "ready-operator-name" }, name),
          el("span", { class: "path facts-under", id: "ready-client-id" }, st.clientId || info.identity),
          st.error ? el("span", { class: "si-error", id: "ready-operator-problem" }, st.error) : null,
        ),
      );
      shell.readyShown().catch(() => undefined);
    },
    (err) => who.replaceChildren(el("p", { class: "si-error" }, `What Companies see could not be read: ${describeError(err)}`)),
  );
  return card;
}

// demoNote is the header's note in the demo: nothing is kept, and how to leave (a button when
// the demo was started from the window, which brings back the user's own Poppydesk).
export function demoNote(shell: Pick<ShellAPI, "leaveDemo">, info: AppInfo, setStatus: (text: string) => void): HTMLElement {
  if (!info.demoFromWindow) {
    return el("p", { class: "chip demo-note", id: "demo-note" }, "Demo: nothing is kept. Close the window to leave it.");
  }
  const leave = el("button", { type: "button", class: "btn btn-secondary btn-small", id: "demo-leave" }, "Leave the demo");
  leave.addEventListener("click", () => {
    leave.disabled = true;
    setStatus("Leaving the demo: your own Poppydesk opens again in a moment, as you left it.");
    shell.leaveDemo().catch((err) => {
      leave.disabled = false;
      setStatus(`Leaving the demo failed: ${describeError(err)}`);
    });
  });
  return el("p", { class: "chip demo-note", id: "demo-note" }, "Demo: nothing is kept. ", leave);
}
