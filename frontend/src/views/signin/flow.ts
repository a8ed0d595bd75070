// A sign-in in progress — Direct Sign-In waiting for the user's browser, or Device Sign-In's
// link, code and QR code — with its countdown and Cancel; then its outcome: the scopes granted,
// or why it did not succeed.

import { type FlowView, type ScopeInfo, describeError } from "../../api";
import { append, el } from "../../dom";
import { companyHeader } from "./company";
import { formatCountdown, secondsLeft } from "./countdown";
import { scopeItem } from "./scopes";
import type { Screen } from "./screen";

export function showFlow(s: Screen, f: FlowView): void {
  const receivedAt = s.now();
  const card = el("section", { class: "si-card si-flow", id: "si-flow", "data-state": f.state, "data-kind": f.kind });
  append(card, [companyHeader(f.company)]);
  if (f.state === "waiting") {
    const count = el("span", { id: "si-countdown", class: "si-countdown", role: "timer" });
    const tick = (): void => {
      count.textContent = formatCountdown(secondsLeft(f.remainingSeconds, receivedAt, s.now()));
    };
    const cancel = el("button", { class: "btn", type: "button", id: "si-cancel" }, "Cancel");
    cancel.addEventListener("click", () => {
      s.backend.cancel(f.id).catch((e) => s.ctx.setStatus(`Could not cancel: ${describeError(e)}`));
    });
    if (f.kind === "device" && f.device) append(card, deviceNodes(f.device));
    else append(card, directNodes(s, f));
    append(card, [
      el("p", { class: "si-time" }, "Time left: ", count),
      el("p", { class: "muted" }, `Asking for: ${(f.requested ?? []).map((r) => (r.description ? `${r.description} (${r.name})` : r.name)).join(", ")}`),
      el("div", { class: "si-actions" }, cancel),
    ]);
    s.put(card);
    tick();
    s.every(1000, tick);
    cancel.focus();
    return;
  }
  const ok = f.state === "succeeded";
  const titles: Record<string, string> = {
    succeeded: `Signed in to ${f.company.name}`,
    declined: "The sign-in was declined",
    cancelled: "Sign-in cancelled",
    expired: "The sign-in expired",
    failed: "The sign-in failed",
  };
  append(card, [el("h2", { id: "si-flow-title" }, titles[f.state] ?? f.state), el("p", { id: "si-message", role: "status" }, f.message ?? "")]);
  if (ok) {
    const granted = el("ul", { class: "si-scope-list", id: "si-granted" });
    for (const name of f.granted ?? []) {
      const info: ScopeInfo = (f.requested ?? []).find((r) => r.name === name) ?? { name, changes: "", personal_data: true, hinted: false, held: false };
      append(granted, [scopeItem(info, 0)]);
    }
    append(card, [el("h3", {}, "Access granted"), granted]);
    if ((f.missing ?? []).length) {
      const words = new Map((f.requested ?? []).map((r) => [r.name, r.description]));
      const missing = (f.missing ?? []).map((m) => (words.get(m) ? `${words.get(m)} (${m})` : m));
      append(card, [el("p", { class: "muted", id: "si-missing" }, `Not granted: ${missing.join(", ")}`)]);
    }
  } else if (f.detail) {
    append(card, [el("details", {}, el("summary", {}, "Details for developers"), el("p", { class: "mono si-detail" }, f.detail))]);
  }
  const done = el("button", { class: "btn btn-primary", type: "button", id: "si-done" }, "Done");
  done.addEventListener("click", () => s.ctx.show("companies"));
  const again = el("button", { class: "btn", type: "button", id: "si-again", hidden: ok }, "Try again");
  again.addEventListener("click", () => void s.plan(f.company.identifier, f.account, ""));
  append(card, [el("div", { class: "si-actions" }, done, again)]);
  s.put(card);
  done.focus();
}

// deviceNodes are Device Sign-In's instructions: the link, the user code and the QR code (never
// the device code).
function deviceNodes(d: NonNullable<FlowView["device"]>): (HTMLElement | null)[] {
  const link = d.verificationUriComplete || d.verificationUri;
  return [
    el("h2", { id: "si-flow-title" }, "Sign in on another device"),
    el("p", {}, `On your phone or another computer, open the sign-in page of ${d.organization} (${d.domain}) and enter the code.`),
    el("p", { class: "si-link mono", id: "si-link" }, d.verificationUri),
    el("p", { class: "si-code-label" }, "Your code"),
    el("p", { class: "si-user-code", id: "si-user-code" }, d.userCode),
    d.qr ? el("img", { class: "si-qr", id: "si-qr", src: d.qr, alt: `QR code of the sign-in link for ${d.organization}`, width: 192, height: 192 }) : null,
    d.qr ? el("p", { class: "muted" }, `The QR code opens ${link}.`) : null,
    el("p", { class: "muted" }, `Enter this code only on ${d.domain}’s page. Opening the link does not sign you in by itself.`),
  ];
}

// directNodes say Direct Sign-In waits for the user's browser, with the link to copy when the
// browser did not open.
function directNodes(s: Screen, f: FlowView): HTMLElement[] {
  const nodes: HTMLElement[] = [el("h2", { id: "si-flow-title" }, "Waiting for you to finish in your browser…")];
  const linkBox = el("input", { class: "si-url mono", id: "si-url", readonly: true, value: f.url ?? "", "aria-label": "Sign-in link" });
  const copy = el("button", { class: "btn", type: "button", id: "si-copy" }, "Copy link");
  copy.addEventListener("click", () => {
    linkBox.select();
    const clip = navigator.clipboard;
    (clip ? clip.writeText(linkBox.value) : Promise.reject(new Error("no clipboard"))).then(
      () => s.ctx.setStatus("The sign-in link is copied."),
      () => s.ctx.setStatus("Select the link and copy it with Ctrl+C."),
    );
  });
  if (f.openError) {
    nodes.push(
      el("p", { class: "si-error", role: "alert", id: "si-open-error" }, `Your browser did not open: ${f.openError}`),
      el("p", {}, "Copy this link into your browser to continue:"),
      el("div", { class: "si-url-row" }, linkBox, copy),
    );
  } else {
    nodes.push(
      el("p", {}, `Your browser shows ${f.company.name}’s sign-in page. Approve there, then come back here.`),
      el("details", { class: "si-url-details" }, el("summary", {}, "The browser didn’t open?"), el("div", { class: "si-url-row" }, linkBox, copy)),
    );
  }
  return nodes;
}
