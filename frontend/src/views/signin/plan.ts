// The plan: what a sign-in would ask for, before the user decides (spec 4.7). The verified
// Company, why it is asked for, the account, a checkbox per scope, and the two buttons that
// start a sign-in, the only way one starts (docs/DESIGN.md invariant 1); they ignore synthetic clicks.

import { type SignInPlan, describeError } from "../../api";
import { append, el } from "../../dom";
import { companyHeader, offeredWords } from "./company";
import { requestWords } from "./reasons";
import { scopeItem } from "./scopes";
import type { Screen } from "./screen";

export async function showPlan(s: Screen, company: string, account: string, requestId: string): Promise<void> {
  let p: SignInPlan;
  try {
    p = await s.backend.plan(company, account, requestId);
  } catch (e) {
    if (!s.gone()) s.put(s.ctx.empty(), s.problem(`Poppydesk could not prepare the sign-in: ${describeError(e)}`));
    return;
  }
  if (s.gone()) return;
  const c = p.company;
  const scopes = p.scopes ?? [];
  const form = el("form", { class: "si-card si-plan", id: "si-plan", "data-company": c.identifier });
  form.addEventListener("submit", (ev) => ev.preventDefault());
  append(form, [companyHeader(c)]);
  if (p.request) {
    append(form, [
      el("p", { class: "si-request-intro" }, (p.request.poppydeskReason ?? "").trim() ? "Your agent’s request needs this sign-in." : "Your agent asked for this sign-in."),
      requestWords(p.request),
    ]);
  }
  append(form, [el("p", { class: "si-offered", id: "si-offered" }, offeredWords(c.signIn))]);
  const signedIn = (p.accounts ?? []).filter((a) => a.signed_in).map((a) => a.account);
  const acct = el("input", { id: "si-account", type: "text", value: p.account, autocomplete: "off", spellcheck: "false" });
  acct.addEventListener("change", () => void s.plan(company, acct.value, requestId));
  append(form, [
    el(
      "div",
      { class: "si-account" },
      el("label", { for: "si-account" }, "Account name in Poppydesk"),
      acct,
      el("span", { class: "muted" }, signedIn.length ? `Signed in already: ${signedIn.join(", ")}` : "Each account keeps its own sign-in."),
    ),
  ]);
  const fs = el("fieldset", { class: "si-scopes" }, el("legend", {}, "Access to ask for"));
  append(fs, [el("p", { class: "muted" }, "Descriptions and hints are the Company’s own claims. Untick what you don’t want to allow.")]);
  const ul = el("ul", { class: "si-scope-list", id: "si-scopes" });
  const boxes: HTMLInputElement[] = [];
  scopes.forEach((sc, i) => {
    const box = el("input", { type: "checkbox", id: `si-scope-${i}`, value: sc.name, checked: sc.checked || sc.held, disabled: sc.held });
    boxes.push(box);
    append(ul, [scopeItem(sc, i, box)]);
  });
  if (scopes.length === 0) append(ul, [el("li", { class: "muted" }, "The Company describes no scopes.")]);
  append(fs, [ul]);
  append(form, [fs]);
  const err = el("p", { class: "si-error", role: "alert", id: "si-error" });
  const direct = el("button", { class: "btn btn-primary", type: "button", id: "si-direct", hidden: !c.signIn.direct }, "Sign in in your browser");
  const device = el("button", { class: "btn", type: "button", id: "si-device", hidden: !c.signIn.device }, "Sign in on another device");
  const back = el("button", { class: "btn", type: "button", id: "si-back" }, "Back");
  const chosen = (): string[] => boxes.filter((b) => b.checked).map((b) => b.value);
  const sync = (): void => {
    const none = chosen().length === 0;
    direct.disabled = none;
    device.disabled = none;
    err.textContent = none ? "Tick at least one scope to sign in." : "";
  };
  boxes.forEach((b) => b.addEventListener("change", sync));
  const go = (kind: "direct" | "device") => (ev: Event) => {
    if (!s.trusted(ev)) return;
    direct.disabled = device.disabled = true;
    const backend = s.backend;
    const start = kind === "direct" ? backend.startDirect : backend.startDevice;
    start.call(backend, c.identifier, acct.value, chosen(), p.request?.id ?? "").then(
      (f) => s.flow(f),
      (e) => {
        err.textContent = `The sign-in did not start: ${describeError(e)}`;
        sync();
      },
    );
  };
  direct.addEventListener("click", go("direct"));
  device.addEventListener("click", go("device"));
  back.addEventListener("click", () => s.ctx.show("companies"));
  append(form, [err, el("div", { class: "si-actions" }, direct, device, back)]);
  s.put(form);
  sync();
  (c.signIn.direct ? direct : c.signIn.device ? device : back).focus();
}
