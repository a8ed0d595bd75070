// The Sign-in section (spec 4.2 Direct Sign-In, 4.3 Device Sign-In, 4.7 scopes and hints;
// DESIGN.md invariant 1: a sign-in starts only from a user gesture in this window).
//
// The screen shows the Company's verified name, domain and logo (from discovery; the logo is a
// data: URL Poppydesk fetched itself, or a placeholder), the scopes with the Company's
// descriptions and hints (a scope without hints, or with a `changes` value Poppydesk does not
// know, is shown as irreversible), the sign-in types the Company offers, and a checkbox per
// scope. Requests from the model appear with its stated reason marked as the model's words
// ("Your agent says: …"); nothing here starts a sign-in except the two buttons, which ignore
// synthetic clicks. Every text is set with textContent (dom.ts).

import { append, el } from "../dom";
import type { SectionView, ViewContext } from "../app";
import * as Go from "../../wailsjs/go/app/SignIn";

// ---- the JSON app.SignIn returns (app/signin.go) ----

export interface ScopeInfo {
  name: string;
  description?: string;
  changes: string;
  personal_data: boolean;
  hinted: boolean;
  held: boolean;
}
export interface PlanScope extends ScopeInfo {
  checked: boolean;
  requested: boolean;
}
export interface SignInOffer {
  offered: boolean;
  disabled: boolean;
  direct: boolean;
  device: boolean;
}
export interface CompanyCard {
  identifier: string;
  name: string;
  domain: string;
  issuer: string;
  logo: string;
  signIn: SignInOffer;
}
export interface AccountStatus {
  company: string;
  account: string;
  signed_in: boolean;
  scopes?: string[] | null;
  resources?: string[] | null;
}
export interface ModelRequest {
  id: string;
  company: string;
  name: string;
  domain: string;
  scopes: string[] | null;
  modelReason: string;
  // Poppydesk's own words when it recorded the request itself (a Company refused one of the
  // model's calls for lack of sign-in or scope); empty for a request the model made.
  poppydeskReason?: string;
  requested: string;
}
export interface SignInPlan {
  company: CompanyCard;
  account: string;
  accounts: AccountStatus[] | null;
  scopes: PlanScope[] | null;
  request?: ModelRequest | null;
}
export interface DeviceView {
  organization: string;
  domain: string;
  verificationUri: string;
  verificationUriComplete: string;
  userCode: string;
  qr: string;
  intervalSeconds: number;
}
export interface FlowView {
  id: string;
  kind: string;
  state: string;
  company: CompanyCard;
  account: string;
  requested: ScopeInfo[] | null;
  deadline: string;
  remainingSeconds: number;
  url?: string;
  openError?: string;
  device?: DeviceView | null;
  granted?: string[] | null;
  missing?: string[] | null;
  message?: string;
  detail?: string;
}

export const EVENT_SIGNIN_FLOW = "signin:flow";
export const EVENT_SIGNIN_REQUESTS = "signin:requests";
export const EVENT_COMPANIES_CHANGED = "companies:changed";

export interface SignInBackend {
  plan(company: string, account: string, requestId: string): Promise<SignInPlan>;
  startDirect(company: string, account: string, scopes: string[], requestId: string): Promise<FlowView>;
  startDevice(company: string, account: string, scopes: string[], requestId: string): Promise<FlowView>;
  cancel(id: string): Promise<void>;
  current(): Promise<FlowView>;
  requests(): Promise<ModelRequest[] | null>;
  dismissRequest(id: string): Promise<void>;
  on(event: string, cb: (...data: unknown[]) => void): () => void;
}

export interface SignInOptions {
  // now is the clock in milliseconds (the countdown).
  now?: () => number;
  // requireTrusted makes the sign-in buttons ignore clicks no user made. jsdom tests turn it off.
  requireTrusted?: boolean;
}

export function describeError(err: unknown): string {
  return typeof err === "string" ? err : err instanceof Error ? err.message : String(err);
}

// ---- pure logic (tested in signin.test.ts) ----

export type Changes = "none" | "reversible" | "irreversible";

// changesOf reads a scope's `changes` hint: a scope without hints, or with a value Poppydesk
// does not recognize, is irreversible (spec 4.7).
export function changesOf(s: Pick<ScopeInfo, "changes" | "hinted">): Changes {
  if (!s.hinted) return "irreversible";
  return s.changes === "none" || s.changes === "reversible" ? s.changes : "irreversible";
}

const CHANGES_WORDS: Record<Changes, string> = {
  none: "Changes nothing",
  reversible: "Changes can be undone",
  irreversible: "Changes can’t be undone",
};

// hintTexts returns the hint chips of a scope, in the Company's terms (its claims, spec 4.7).
export function hintTexts(s: ScopeInfo): { kind: string; text: string }[] {
  const out = [{ kind: `changes-${changesOf(s)}`, text: CHANGES_WORDS[changesOf(s)] }];
  if (!s.hinted || s.personal_data) out.push({ kind: "personal", text: "Your personal data" });
  if (!s.hinted) out.push({ kind: "unhinted", text: "No hints from the Company: treated as the most consequential" });
  return out;
}

// formatCountdown shows whole seconds as m:ss (or h:mm:ss).
export function formatCountdown(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

// secondsLeft is the countdown of a view received at receivedAt (ms), as of now (ms): the Go side
// gives the seconds left when it made the view, so the two clocks never need to agree.
export function secondsLeft(remainingSeconds: number, receivedAt: number, now: number): number {
  return Math.max(0, Math.ceil(remainingSeconds - (now - receivedAt) / 1000));
}

// offeredWords says which sign-in types the Company offers Personal Agents (spec 3.2, 4).
export function offeredWords(o: SignInOffer): string {
  if (o.disabled) return "This Company has turned sign-in off for Personal Agents (auth.disabled).";
  if (!o.offered || (!o.direct && !o.device)) return "This Company offers no sign-in to Personal Agents; your agent works signed out there.";
  const kinds = [o.direct ? "sign-in in your browser" : "", o.device ? "sign-in on another device" : ""].filter(Boolean);
  return `This Company offers ${kinds.join(" and ")}.`;
}

// modelWords renders the model's stated reason, marked as the model's words, never Poppydesk's.
export function modelWords(reason: string): HTMLElement {
  const box = el("div", { class: "si-model", role: "note" });
  append(box, [
    el("p", { class: "si-model-label" }, "Your agent says:"),
    el("blockquote", { class: "si-model-quote" }, reason.trim() ? `“${reason.trim()}”` : "(no reason given)"),
    el("p", { class: "si-model-note" }, "These are your agent’s words, not Poppydesk’s or the Company’s. Nothing happens unless you press a sign-in button."),
  ]);
  return box;
}

// requestWords shows why a sign-in is asked for: Poppydesk's own words when Poppydesk recorded the
// request after a Company's refusal, otherwise the model's stated reason, marked as the model's.
export function requestWords(r: ModelRequest): HTMLElement {
  const need = (r.poppydeskReason ?? "").trim();
  if (!need) return modelWords(r.modelReason);
  const box = el("div", { class: "si-need", role: "note" });
  append(box, [
    el("p", { class: "si-need-label" }, "Poppydesk asks because:"),
    el("p", { class: "si-need-text" }, need),
    el("p", { class: "si-model-note" }, "Your agent’s call was not performed. Nothing happens unless you press a sign-in button."),
  ]);
  return box;
}

export function requestTitle(r: ModelRequest): string {
  const who = r.name || r.company;
  return (r.poppydeskReason ?? "").trim()
    ? `Your agent’s request needs you to sign in to ${who}`
    : `Your agent asks you to sign in to ${who}`;
}

// ---- the selection handed over by the Companies section ----

let pending: { company: string; requestId: string } | null = null;

// openSignIn shows the Sign-in section for company (from a "Sign in…" button).
export function openSignIn(ctx: ViewContext, company: string, requestId = ""): void {
  pending = { company, requestId };
  ctx.show("signin");
}

// ---- the view ----

function companyHeader(c: CompanyCard): HTMLElement {
  const logo = c.logo.startsWith("data:image/")
    ? el("img", { class: "si-logo", src: c.logo, alt: `${c.name} logo`, width: 48, height: 48 })
    : el("div", { class: "si-logo si-logo-placeholder", "aria-hidden": "true" }, (c.name.trim()[0] ?? "?").toUpperCase());
  return el(
    "div",
    { class: "si-company" },
    logo,
    el(
      "div",
      { class: "si-company-text" },
      el("h2", { class: "si-company-name", id: "si-company-name" }, c.name),
      el("p", { class: "si-company-domain mono", id: "si-company-domain" }, c.domain),
      el("p", { class: "muted si-verified" }, `Name and domain verified by discovery (https://${c.domain}/.well-known/poppy.json). Identifier: ${c.identifier}`),
    ),
  );
}

function scopeItem(s: ScopeInfo, i: number, box?: HTMLInputElement): HTMLElement {
  const chips = el("span", { class: "si-chips" });
  for (const h of hintTexts(s)) append(chips, [el("span", { class: `si-chip si-${h.kind}` }, h.text)]);
  const label = el(
    "label",
    { for: box ? box.id : undefined, class: "si-scope-label" },
    el("span", { class: "si-scope-desc" }, s.description || s.name),
    " ",
    el("code", { class: "si-scope-name" }, s.name),
  );
  const li = el("li", { class: "si-scope", "data-scope": s.name, "data-changes": changesOf(s) });
  append(li, [box, el("div", { class: "si-scope-body" }, label, chips)]);
  if (s.held) append(li.lastChild as HTMLElement, [el("p", { class: "muted si-held" }, "Already granted: asked for again so you keep it (spec 4.7).")]);
  if (!box) li.dataset.index = String(i);
  return li;
}

export function signInView(backend: SignInBackend, opts: SignInOptions = {}): SectionView {
  const now = opts.now ?? (() => Date.now());
  const requireTrusted = opts.requireTrusted ?? true;

  return (host: HTMLElement, ctx: ViewContext) => {
    let timer: ReturnType<typeof setInterval> | undefined;
    let gone = false;
    let shownFlow = "";
    const offs: (() => void)[] = [];

    const stopTimer = (): void => {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
    };
    const put = (...nodes: Node[]): void => {
      stopTimer();
      host.replaceChildren(...nodes);
    };
    const problem = (text: string): HTMLElement => el("p", { class: "si-error", role: "alert", id: "si-error" }, text);
    const trusted = (ev: Event): boolean => !requireTrusted || ev.isTrusted;

    // -- home: the model's requests, or the empty state --
    async function home(): Promise<void> {
      let reqs: ModelRequest[] = [];
      let err = "";
      try {
        reqs = (await backend.requests()) ?? [];
      } catch (e) {
        err = describeError(e);
      }
      if (gone) return;
      if (reqs.length === 0) {
        const nodes: Node[] = [ctx.empty()];
        if (err) nodes.push(problem(`Sign-in is unavailable: ${err}`));
        put(...nodes);
        return;
      }
      const list = el("ul", { class: "si-requests", id: "si-requests" });
      for (const r of reqs) {
        const review = el("button", { class: "btn btn-primary", type: "button" }, "Review…");
        review.addEventListener("click", () => void plan(r.company, "", r.id));
        const dismiss = el("button", { class: "btn", type: "button" }, "Dismiss");
        dismiss.addEventListener("click", () => {
          backend.dismissRequest(r.id).then(
            () => void home(),
            (e) => ctx.setStatus(`Could not dismiss the request: ${describeError(e)}`),
          );
        });
        append(list, [
          el(
            "li",
            { class: "si-card si-request", "data-request": r.id },
            el("h2", {}, requestTitle(r)),
            el("p", { class: "mono" }, r.domain),
            el("p", {}, `Access it asks for: ${(r.scopes ?? []).join(", ") || "(none named)"}`),
            requestWords(r),
            el("div", { class: "si-actions" }, review, dismiss),
          ),
        ]);
      }
      put(el("p", { class: "muted si-intro" }, "Your agent can ask for a sign-in, but only you can start one, here."), list);
    }

    // -- the plan: what the sign-in would ask for, before the User decides --
    async function plan(company: string, account: string, requestId: string): Promise<void> {
      let p: SignInPlan;
      try {
        p = await backend.plan(company, account, requestId);
      } catch (e) {
        if (!gone) put(ctx.empty(), problem(`Poppydesk could not prepare the sign-in: ${describeError(e)}`));
        return;
      }
      if (gone) return;
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
      acct.addEventListener("change", () => void plan(company, acct.value, requestId));
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
      scopes.forEach((s, i) => {
        const box = el("input", { type: "checkbox", id: `si-scope-${i}`, value: s.name, checked: s.checked || s.held, disabled: s.held });
        boxes.push(box);
        append(ul, [scopeItem(s, i, box)]);
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
        if (!trusted(ev)) return;
        direct.disabled = device.disabled = true;
        const start = kind === "direct" ? backend.startDirect : backend.startDevice;
        start.call(backend, c.identifier, acct.value, chosen(), p.request?.id ?? "").then(
          (f) => showFlow(f),
          (e) => {
            err.textContent = `The sign-in did not start: ${describeError(e)}`;
            sync();
          },
        );
      };
      direct.addEventListener("click", go("direct"));
      device.addEventListener("click", go("device"));
      back.addEventListener("click", () => ctx.show("companies"));
      append(form, [err, el("div", { class: "si-actions" }, direct, device, back)]);
      put(form);
      sync();
      (c.signIn.direct ? direct : c.signIn.device ? device : back).focus();
    }

    // -- a sign-in in progress, or its outcome --
    function showFlow(f: FlowView): void {
      if (gone) return;
      shownFlow = f.id;
      const receivedAt = now();
      const card = el("section", { class: "si-card si-flow", id: "si-flow", "data-state": f.state, "data-kind": f.kind });
      append(card, [companyHeader(f.company)]);
      if (f.state === "waiting") {
        const count = el("span", { id: "si-countdown", class: "si-countdown", role: "timer" });
        const tick = (): void => {
          count.textContent = formatCountdown(secondsLeft(f.remainingSeconds, receivedAt, now()));
        };
        const cancel = el("button", { class: "btn", type: "button", id: "si-cancel" }, "Cancel");
        cancel.addEventListener("click", () => {
          backend.cancel(f.id).catch((e) => ctx.setStatus(`Could not cancel: ${describeError(e)}`));
        });
        if (f.kind === "device" && f.device) {
          const d = f.device;
          const link = d.verificationUriComplete || d.verificationUri;
          append(card, [
            el("h2", { id: "si-flow-title" }, "Sign in on another device"),
            el("p", {}, `On your phone or another computer, open the sign-in page of ${d.organization} (${d.domain}) and enter the code.`),
            el("p", { class: "si-link mono", id: "si-link" }, d.verificationUri),
            el("p", { class: "si-code-label" }, "Your code"),
            el("p", { class: "si-user-code", id: "si-user-code" }, d.userCode),
            d.qr ? el("img", { class: "si-qr", id: "si-qr", src: d.qr, alt: `QR code of the sign-in link for ${d.organization}`, width: 192, height: 192 }) : null,
            d.qr ? el("p", { class: "muted" }, `The QR code opens ${link}.`) : null,
            el("p", { class: "muted" }, `Enter this code only on ${d.domain}’s page. Opening the link does not sign you in by itself.`),
          ]);
        } else {
          append(card, [el("h2", { id: "si-flow-title" }, "Waiting for you to finish in your browser…")]);
          const linkBox = el("input", { class: "si-url mono", id: "si-url", readonly: true, value: f.url ?? "", "aria-label": "Sign-in link" });
          const copy = el("button", { class: "btn", type: "button", id: "si-copy" }, "Copy link");
          copy.addEventListener("click", () => {
            linkBox.select();
            const clip = navigator.clipboard;
            (clip ? clip.writeText(linkBox.value) : Promise.reject(new Error("no clipboard"))).then(
              () => ctx.setStatus("The sign-in link is copied."),
              () => ctx.setStatus("Select the link and copy it with Ctrl+C."),
            );
          });
          if (f.openError) {
            append(card, [
              el("p", { class: "si-error", role: "alert", id: "si-open-error" }, `Your browser did not open: ${f.openError}`),
              el("p", {}, "Copy this link into your browser to continue:"),
              el("div", { class: "si-url-row" }, linkBox, copy),
            ]);
          } else {
            append(card, [
              el("p", {}, `Your browser shows ${f.company.name}’s sign-in page. Approve there, then come back here.`),
              el("details", { class: "si-url-details" }, el("summary", {}, "The browser didn’t open?"), el("div", { class: "si-url-row" }, linkBox, copy)),
            ]);
          }
        }
        append(card, [
          el("p", { class: "si-time" }, "Time left: ", count),
          el("p", { class: "muted" }, `Asking for: ${(f.requested ?? []).map((s) => s.name).join(", ")}`),
          el("div", { class: "si-actions" }, cancel),
        ]);
        put(card);
        tick();
        timer = setInterval(tick, 1000);
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
          const info = (f.requested ?? []).find((s) => s.name === name) ?? { name, changes: "", personal_data: true, hinted: false, held: false };
          append(granted, [scopeItem(info, 0)]);
        }
        append(card, [el("h3", {}, "Access granted"), granted]);
        if ((f.missing ?? []).length) append(card, [el("p", { class: "muted", id: "si-missing" }, `Not granted: ${(f.missing ?? []).join(", ")}`)]);
      } else if (f.detail) {
        append(card, [el("details", {}, el("summary", {}, "Details for developers"), el("p", { class: "mono si-detail" }, f.detail))]);
      }
      const done = el("button", { class: "btn btn-primary", type: "button", id: "si-done" }, "Done");
      done.addEventListener("click", () => ctx.show("companies"));
      const again = el("button", { class: "btn", type: "button", id: "si-again", hidden: ok }, "Try again");
      again.addEventListener("click", () => void plan(f.company.identifier, f.account, ""));
      append(card, [el("div", { class: "si-actions" }, done, again)]);
      put(card);
      done.focus();
    }

    offs.push(
      backend.on(EVENT_SIGNIN_FLOW, (data) => {
        const f = data as FlowView;
        if (f && f.id && f.id === shownFlow) showFlow(f);
      }),
      backend.on(EVENT_SIGNIN_REQUESTS, () => {
        if (!shownFlow && !host.querySelector("#si-plan")) void home();
      }),
    );

    const sel = pending;
    pending = null;
    if (sel) {
      void plan(sel.company, "", sel.requestId);
    } else {
      backend.current().then(
        (f) => {
          if (f && f.id && f.state === "waiting") showFlow(f);
          else void home();
        },
        () => void home(),
      );
    }
    return () => {
      gone = true;
      stopTimer();
      offs.forEach((off) => off());
    };
  };
}

// ---- the Go service (generated bindings) ----

function safe<T>(f: () => Promise<T>): Promise<T> {
  try {
    return f();
  } catch (e) {
    return Promise.reject(e);
  }
}

interface RuntimeEvents {
  EventsOnMultiple(name: string, cb: (...data: unknown[]) => void, max: number): (() => void) | void;
}

export const goSignIn: SignInBackend = {
  plan: (c, a, r) => safe(() => Go.Plan(c, a, r) as unknown as Promise<SignInPlan>),
  startDirect: (c, a, s, r) => safe(() => Go.StartDirect(c, a, s, r) as unknown as Promise<FlowView>),
  startDevice: (c, a, s, r) => safe(() => Go.StartDevice(c, a, s, r) as unknown as Promise<FlowView>),
  cancel: (id) => safe(() => Go.Cancel(id)),
  current: () => safe(() => Go.Current() as unknown as Promise<FlowView>),
  requests: () => safe(() => Go.Requests() as unknown as Promise<ModelRequest[]>),
  dismissRequest: (id) => safe(() => Go.DismissRequest(id)),
  on(event, cb) {
    const rt = (window as unknown as { runtime?: RuntimeEvents }).runtime;
    const off = rt?.EventsOnMultiple(event, cb, -1);
    return typeof off === "function" ? off : () => {};
  },
};
