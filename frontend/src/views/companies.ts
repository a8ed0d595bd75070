// The Companies section (spec 3 discovery, 3.2 identifiers, 4.6 and 5.5 sign-out, 9.1 excluded
// tasks): the discovered Companies under their verified names, with the sign-in they offer, the
// accounts signed in (with scopes) and the tasks the Company chose not to offer with the other
// way it gives, a field to discover a domain, "Sign in…", "Sign out" and "Forget this Company".
// Discover, Sign out and Forget are user gestures here; "Sign in…" only opens the Sign-in
// section, where the User decides. Every text, the Company's included, is set with textContent
// (dom.ts).

import { append, el } from "../dom";
import { inTurn } from "../inturn";
import type { SectionView, ViewContext } from "../app";
import { type AccountStatus, type CompaniesAPI, type CompanyEntry, type CompanyList, type ExcludedTaskEntry, EVENTS, describeError } from "../api";
import { offeredWords, openSignIn } from "./signin";

// CompaniesBackend is what the view needs from Go: fronts.Companies (api.companies, or a test's fake).
export type CompaniesBackend = CompaniesAPI;

// COMPANIES_PAGE is how many Companies one read brings: the first screen and a little more, so
// the screen opens as fast with 200 Companies as with 2; PAGE_MAX is app.CompaniesPageMax.
export const COMPANIES_PAGE = 30;
const PAGE_MAX = 100;

// accountWords describes one signed-in account: its label and what it may do, each scope with
// the Company's own description beside its name when it gave one. demoAccount is the account the
// demo signed in (on the demo's Company): only that one is called the demo's.
export function accountWords(a: AccountStatus, words: Record<string, string> | null = null, demoAccount = ""): string {
  const scopes = (a.scopes ?? []).map((s) => (words?.[s] ? `${words[s]} (${s})` : s));
  const who = demoAccount && a.account === demoAccount ? `${a.account} (the demo’s account)` : a.account;
  return scopes.length ? `${who}: ${scopes.join(", ")}` : `${who}: signed in`;
}

// excludedList shows the tasks a Company does not offer, each with its alternative in plain words.
export function excludedList(tasks: ExcludedTaskEntry[]): HTMLElement {
  const ul = el("ul", { class: "co-excluded" });
  for (const t of tasks) {
    const li = el("li", { class: "co-excluded-task" }, el("span", { class: "co-task" }, t.task));
    if (t.alternative) li.appendChild(el("span", { class: "co-alternative" }, `Instead: ${t.alternative}`));
    ul.appendChild(li);
  }
  return ul;
}

function confirmButton(label: string, id: string, confirmText: string, act: () => Promise<void>, onError: (e: unknown) => void): HTMLElement {
  const wrap = el("span", { class: "co-confirm" });
  const first = el("button", { class: "btn btn-secondary", type: "button", id }, label);
  first.addEventListener("click", () => {
    const yes = el("button", { class: "btn btn-danger", type: "button", id: `${id}-yes` }, confirmText);
    const no = el("button", { class: "btn btn-secondary", type: "button", id: `${id}-no` }, "Keep");
    no.addEventListener("click", () => {
      wrap.replaceChildren(first);
      first.focus();
    });
    yes.addEventListener("click", () => {
      yes.disabled = no.disabled = true;
      act().catch((e) => {
        onError(e);
        wrap.replaceChildren(first);
      });
    });
    wrap.replaceChildren(yes, no);
    no.focus();
  });
  wrap.appendChild(first);
  return wrap;
}

export function companiesView(backend: CompaniesBackend): SectionView {
  return (host: HTMLElement, ctx: ViewContext) => {
    let gone = false;
    const message = el("p", { class: "co-message", id: "co-message", role: "status" });
    const domain = el("input", { id: "co-domain", type: "text", placeholder: "example.com", autocomplete: "off", spellcheck: "false" });
    const discover = el("button", { class: "btn btn-primary", type: "submit", id: "co-discover" }, "Discover");
    const form = el(
      "form",
      { class: "co-discover", id: "co-discover-form" },
      el("label", { for: "co-domain" }, "Add a Company by its domain"),
      el("div", { class: "co-discover-row" }, domain, discover),
      message,
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const d = domain.value.trim();
      if (!d) {
        message.textContent = "Type a domain first, such as example.com.";
        return;
      }
      discover.disabled = true;
      message.textContent = `Verifying ${d}…`;
      backend.discover(d).then(
        (e) => {
          discover.disabled = false;
          domain.value = "";
          message.textContent = `Verified: ${e.company.name} (${e.company.domain}).`;
          void load();
        },
        (err) => {
          discover.disabled = false;
          message.textContent = describeError(err);
        },
      );
    });
    // aria-busy until the first read of the list has ended, for assistive technology.
    const list = el("div", { class: "co-list", id: "co-list", "aria-busy": "true" });
    host.replaceChildren(form, list);

    const fail = (what: string) => (e: unknown) => {
      message.textContent = `${what}: ${describeError(e)}`;
    };

    function card(e: CompanyEntry): HTMLElement {
      const c = e.company;
      const li = el("li", { class: "co-card", "data-company": c.identifier });
      const accounts = (e.accounts ?? []).filter((a) => a.signed_in);
      const accts = el("ul", { class: "co-accounts" });
      accounts.forEach((a, i) => {
        const out = confirmButton("Sign out", `co-signout-${cssId(c.identifier)}-${i}`, "Sign out now", () =>
          backend.signOut(c.identifier, a.account).then(() => {
            message.textContent = `Signed out of ${c.name} (${a.account}).`;
            return load();
          }), fail("Sign-out failed"));
        append(accts, [el("li", { class: "co-account", "data-account": a.account }, el("span", {}, accountWords(a, e.scopeWords, e.demoAccount ?? "")), out)]);
      });
      const signIn = el("button", { class: "btn btn-primary", type: "button", hidden: !(c.signIn.direct || c.signIn.device) }, "Sign in…");
      signIn.setAttribute("data-action", "signin");
      signIn.addEventListener("click", () => openSignIn(ctx, c.identifier));
      const forget = confirmButton("Forget this Company", `co-forget-${cssId(c.identifier)}`, "Forget it", () =>
        backend.forget(c.identifier).then(() => {
          message.textContent = `${c.name} is forgotten.`;
          return load();
        }), fail("Forgetting failed"));
      append(li, [
        el("h2", { class: "co-name" }, c.name),
        el(
          "dl",
          { class: "facts co-facts" },
          el("dt", {}, "Domain"),
          el("dd", { class: "mono" }, c.domain),
          el("dt", {}, "Identifier"),
          el("dd", { class: "mono" }, c.identifier),
          el("dt", {}, "Sign-in"),
          el("dd", {}, offeredWords(c.signIn)),
          el("dt", {}, "Accounts"),
          el("dd", {}, accounts.length ? accts : "Not signed in."),
          ...(e.demoAccount && accounts.some((a) => a.account === e.demoAccount)
            ? [el("dt", {}, "Demo"), el("dd", { class: "muted", id: "co-demo-note" }, "The demo signed this account in at start with a real sign-in. Sign out works as it does anywhere; Reset demo (in Approvals) signs it in again.")]
            : []),
          ...excludedFacts(e),
        ),
        e.problem ? el("p", { class: "si-error" }, e.problem) : null,
        el("div", { class: "si-actions" }, signIn, forget),
      ]);
      return li;
    }

    // shown are the Companies listed so far (pages of COMPANIES_PAGE), next the cursor after
    // them ("" when they are all); a reload after a change reads as many again, so the card the
    // user acted on stays in view.
    let shown = 0;
    let next = "";
    const ul = el("ul", { class: "co-cards" });
    const more = el("button", { class: "btn btn-secondary", type: "button", id: "co-more" }, "Show more Companies");
    const moreRow = el("p", { class: "co-more" }, more);
    // Every read of the list runs in turn (inTurn), so a click while another read runs is never
    // lost: it reads the next page after that read. The button stays enabled (a click on a
    // disabled button would be dropped) and says aria-busy while a read runs.
    const reads = inTurn((busy) => (busy ? more.setAttribute("aria-busy", "true") : more.removeAttribute("aria-busy")));
    const readMore = async () => {
      if (gone || !next) return;
      try {
        const l = await backend.list(next, COMPANIES_PAGE);
        if (gone) return;
        for (const e of l.companies ?? []) ul.appendChild(card(e));
        shown += (l.companies ?? []).length;
        next = l.next;
        showMore(l.total);
      } catch (e) {
        message.textContent = `Reading more Companies failed: ${describeError(e)}`;
      }
    };
    more.addEventListener("click", () => reads.run(readMore));
    const showMore = (total: number) => {
      moreRow.hidden = !next;
      more.textContent = `Show more Companies (${Math.max(0, total - shown)} more)`;
    };
    // The button reads the next page by itself when it scrolls into view, where the window can
    // tell (IntersectionObserver).
    const View = host.ownerDocument.defaultView as (Window & typeof globalThis) | null;
    const seen = View && "IntersectionObserver" in View ? new View.IntersectionObserver((es) => es.some((e) => e.isIntersecting) && !reads.busy() && reads.run(readMore)) : null;
    seen?.observe(more);

    async function load(): Promise<void> {
      const want = Math.max(COMPANIES_PAGE, shown);
      const entries: CompanyEntry[] = [];
      let l: CompanyList = { companies: [], next: "", total: 0 };
      try {
        let cursor = "";
        do {
          l = await backend.list(cursor, Math.min(want - entries.length, PAGE_MAX));
          entries.push(...(l.companies ?? []));
          cursor = l.next;
        } while (cursor && entries.length < want);
      } catch (e) {
        if (!gone) list.replaceChildren(ctx.empty(), el("p", { class: "si-error" }, `Companies are unavailable: ${describeError(e)}`));
        list.removeAttribute("aria-busy");
        return;
      }
      if (gone) return;
      list.removeAttribute("aria-busy");
      shown = entries.length;
      next = l.next;
      if (entries.length === 0) {
        list.replaceChildren(ctx.empty());
        return;
      }
      ul.replaceChildren(...entries.map(card));
      showMore(l.total);
      list.replaceChildren(ul, moreRow);
    }

    // A burst of changes (the excluded tasks of many Companies read one after another) reads
    // the list again once.
    const reload = () => reads.reload(load);
    const off = backend.on(EVENTS.companiesChanged, reload);
    reload();
    return () => {
      gone = true;
      seen?.disconnect();
      off();
    };
  };
}

// excludedFacts are the "Not offered" term and description of a card (none when the Company
// lists no task it chose not to offer).
function excludedFacts(e: CompanyEntry): HTMLElement[] {
  const tasks = e.excludedTasks ?? [];
  if (tasks.length === 0 && !e.excludedTasksProblem) return [];
  return [el("dt", {}, "Not offered"), el("dd", {}, tasks.length ? excludedList(tasks) : (e.excludedTasksProblem ?? ""))];
}

// cssId turns an identifier into a string usable inside an element id.
export function cssId(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, "_");
}
