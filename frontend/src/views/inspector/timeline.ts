// The Inspector's timeline: every exchange the engine made, newest first, with its cause,
// filters (Company, Session, errors, findings), search, and the export of a selection as HAR
// 1.2 or curl (both from the stored, redacted exchanges). In developer mode an exchange sent in
// a Session can be edited and sent again (resend.ts); the answer is shown beside the original,
// and the timeline links the new exchange to it. Text is set with textContent only.

import {
  type InspectorAPI,
  type InspectorEntry,
  type InspectorPage,
  type InspectorQuery,
  type InspectorResent,
  type InspectorRow,
  EVENTS,
  describeError,
} from "../../api";
import { el } from "../../dom";
import { durationOf, timeOf } from "../activity";
import { entryView } from "./entry";
import { resendForm } from "./resend";
import { inTurn } from "../../inturn";

// statusClass groups an HTTP status for styling.
export function statusClass(r: Pick<InspectorRow, "status">): string {
  if (r.status === 0) return "problem";
  if (r.status >= 400) return "problem";
  if (r.status >= 300) return "attention";
  return "ok";
}

// pathOf shows a URL without its scheme.
export function pathOf(url: string): string {
  return url.replace(/^https:\/\//, "");
}

// urlParts splits a URL shown in the timeline into its host and the rest (the path and query),
// so that a narrow list shortens the host, never the path that tells the exchanges apart.
export function urlParts(url: string): { host: string; path: string } {
  const rest = pathOf(url);
  const i = rest.indexOf("/");
  return i < 0 ? { host: rest, path: "" } : { host: rest.slice(0, i), path: rest.slice(i) };
}

export function timelineView(backend: InspectorAPI, host: HTMLElement, empty?: () => HTMLElement): () => void {
  const q: InspectorQuery = { company: "", sid: "", errors_only: false, findings_only: false, search: "", limit: 200 };
  const selected = new Set<number>();
  const company = el("select", { id: "insp-company", "aria-label": "Company" });
  const session = el("select", { id: "insp-session", "aria-label": "Session" });
  const errors = el("input", { type: "checkbox", id: "insp-errors" });
  const findings = el("input", { type: "checkbox", id: "insp-findings" });
  const search = el("input", { type: "search", id: "insp-search", placeholder: "Search URL, status, cause, finding", "aria-label": "Search" });
  const har = el("button", { type: "button", id: "insp-har", class: "btn btn-secondary" }, "Export HAR");
  const curl = el("button", { type: "button", id: "insp-curl", class: "btn btn-secondary" }, "Copy as curl");
  const out = el("textarea", { id: "insp-export", class: "insp-export", readonly: true, hidden: true, "aria-label": "Export", rows: 8 });
  const summary = el("p", { class: "insp-summary", id: "insp-summary" });
  const list = el("ol", { class: "insp-list", id: "insp-list" });
  const detail = el("div", { class: "insp-detail", id: "insp-detail" });
  const bar = el(
    "div",
    { class: "insp-filters" },
    company,
    session,
    el("label", {}, errors, " Errors"),
    el("label", {}, findings, " Findings"),
    search,
    har,
    curl,
  );
  host.replaceChildren(bar, summary, out, el("div", { class: "insp-split" }, list, detail));

  const options = (sel: HTMLSelectElement, all: string, values: readonly string[] | null, cur: string) => {
    const opts = [el("option", { value: "" }, all), ...(values ?? []).map((v) => el("option", { value: v }, v))];
    sel.replaceChildren(...opts);
    sel.value = cur;
  };

  // Reads run in turn (inTurn) and each answer is shown, so a steady stream of changes cannot
  // keep the timeline from appearing; a read that waits reads the filters as they are when it
  // starts, so a burst of keystrokes reads once after the read that runs.
  let gone = false;
  const reads = inTurn();
  const read = async () => {
    if (gone) return;
    try {
      const p = await backend.list({ ...q });
      if (!gone) render(p);
    } catch (err) {
      if (!gone) summary.textContent = `The exchange log could not be read: ${describeError(err)}`;
    }
  };
  const load = () => reads.reload(read);

  // offered: the Host offers edit-and-resend (developer mode), as the last page said.
  let offered = false;
  const showEntry = (e: InspectorEntry) => {
    const tools = el("div", { class: "insp-tools" });
    if (offered && e.row.sid) {
      const edit = el("button", { type: "button", id: "insp-resend-open", class: "btn btn-secondary" }, "Edit and resend");
      edit.addEventListener("click", () => detail.replaceChildren(resendForm(backend, e, (r) => showResent(e, r)), entryView(e)));
      tools.append(edit);
    }
    if (e.row.resend_of) {
      const orig = el("button", { type: "button", id: "insp-open-original", class: "btn btn-quiet" }, `Open the original, exchange ${e.row.resend_of}`);
      orig.addEventListener("click", () => openEntry(e.row.resend_of));
      tools.append(orig);
    }
    detail.replaceChildren(tools, entryView(e));
    // In a small window the exchange opens below the list: it comes into view.
    detail.scrollIntoView?.({ block: "nearest" });
  };
  const showResent = (orig: InspectorEntry, r: InspectorResent) => {
    const n = r.entry.row;
    detail.replaceChildren(
      el(
        "p",
        { id: "insp-rs-result", class: r.refused ? "problem" : "ok", role: "status" },
        r.refused || `Sent again as exchange ${n.id}: HTTP ${n.status}.`,
        (r.ids ?? []).length > 1 ? ` Poppydesk sent it ${(r.ids ?? []).length} times (${(r.ids ?? []).join(", ")}), as the Company’s answers asked.` : "",
      ),
      el(
        "div",
        { class: "insp-compare", id: "insp-compare" },
        el("section", { "aria-label": "The original" }, el("h4", {}, `Original · exchange ${orig.row.id}`), entryView(orig)),
        el("section", { "aria-label": "Sent again" }, el("h4", {}, `Sent again · exchange ${n.id}`), entryView(r.entry)),
      ),
    );
  };
  const openEntry = (id: number) =>
    backend.entry(id).then(showEntry, (err) => detail.replaceChildren(el("p", { class: "problem" }, describeError(err))));

  const render = (p: InspectorPage) => {
    offered = !!p.resend;
    options(company, "All Companies", p.companies, q.company ?? "");
    options(session, "All Sessions", p.sessions, q.sid ?? "");
    const rows = p.rows ?? [];
    const filtered = !!(q.company || q.sid || q.errors_only || q.findings_only || q.search);
    if (empty && p.total === 0 && !filtered) {
      // Nothing recorded at all: the section's own empty state says what will appear.
      summary.replaceChildren(empty());
      list.replaceChildren();
      return;
    }
    summary.textContent =
      p.total === 0
        ? "No exchange matches. Every request Poppydesk makes to a Company appears here as it happens."
        : `${p.total} exchange${p.total === 1 ? "" : "s"}${p.capped ? ` among the log’s newest ${p.searched}` : ""}${p.total > rows.length ? `, the newest ${rows.length} shown` : ""}. Select rows to export them.`;
    list.replaceChildren(
      ...rows.map((r) => {
        const box = el("input", { type: "checkbox", "aria-label": `Select exchange ${r.id}`, checked: selected.has(r.id) });
        box.addEventListener("change", () => (box.checked ? selected.add(r.id) : selected.delete(r.id)));
        const open = el(
          "button",
          { type: "button", class: "insp-open", "data-id": r.id },
          el("span", { class: `insp-status ${statusClass(r)}` }, r.status === 0 ? "—" : String(r.status)),
          el("span", { class: "insp-method" }, r.method),
          el("span", { class: "insp-url", title: r.url }, el("span", { class: "insp-host" }, urlParts(r.url).host), el("span", { class: "insp-path" }, urlParts(r.url).path)),
          el(
            "span",
            { class: "insp-meta" },
            `${timeOf(r.at)} · ${durationOf(r.duration_ms)}${r.cause ? ` · ${r.cause}` : ""}${r.resend_of ? ` · resend of exchange ${r.resend_of}` : ""}`,
          ),
          r.findings > 0 ? el("span", { class: `insp-flag ${r.must_fail ? "must" : "should"}` }, `${r.findings} finding${r.findings === 1 ? "" : "s"}`) : null,
        );
        open.addEventListener("click", () => {
          for (const b of list.querySelectorAll(".insp-open[aria-current]")) b.removeAttribute("aria-current");
          open.setAttribute("aria-current", "true");
          openEntry(r.id);
        });
        return el("li", { class: "insp-row", "data-id": r.id, "data-resend-of": r.resend_of || undefined }, box, open);
      }),
    );
  };

  company.addEventListener("change", () => ((q.company = company.value), (q.sid = ""), load()));
  session.addEventListener("change", () => ((q.sid = session.value), load()));
  errors.addEventListener("change", () => ((q.errors_only = errors.checked), load()));
  findings.addEventListener("change", () => ((q.findings_only = findings.checked), load()));
  search.addEventListener("input", () => ((q.search = search.value), load()));
  const exportWith = (fn: (ids: number[]) => Promise<string>) => () => {
    const ids = [...selected];
    if (ids.length === 0) {
      summary.textContent = "Select one or more exchanges to export first.";
      return;
    }
    fn(ids).then(
      (text) => {
        out.hidden = false;
        out.value = text;
        out.select();
      },
      (err) => (summary.textContent = `Export failed: ${describeError(err)}`),
    );
  };
  har.addEventListener("click", exportWith(backend.exportHAR));
  curl.addEventListener("click", exportWith(backend.exportCurl));

  // A burst of new exchanges reads the timeline again once, a moment after the first of them.
  let pending = false;
  const off = backend.on(EVENTS.inspectorChanged, () => {
    if (pending) return;
    pending = true;
    setTimeout(() => ((pending = false), reads.reload(read)), 250);
  });
  load();
  return () => {
    gone = true;
    if (typeof off === "function") off();
  };
}
