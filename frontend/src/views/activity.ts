// The Inspector's "Activity: what your model asked" (agentcore/modelapi; docs/DESIGN.md "Who uses it"
// 2): every request the model made through Poppydesk's MCP interface, newest first, with the
// tool, the Company it named, when, the result status and how long it took. The list holds no
// arguments and nothing a Company wrote. Below it, every report of a task Poppydesk could not do
// that was sent to a Company, exactly as sent (spec 9.3). Every text is set with textContent
// (dom.ts). Nothing here decides anything.

import { type ActivityAPI, type ActivityEntry, EVENTS, type FeedbackReport, describeError } from "../api";
import { el } from "../dom";
import type { SectionView } from "../app";

// ActivityBackend is what the view needs from Go: fronts.Activity (api.activity, or a test's fake).
export type ActivityBackend = ActivityAPI;

// ---- pure helpers (tested in activity.test.ts) ----

const STATUS_WORDS: Record<string, string> = {
  done: "Done",
  waiting_for_user: "Waiting for you",
  asked_user: "Asked you",
  refused: "Refused",
  error: "Error",
  failed: "Failed",
  declined: "Declined",
  expired: "Expired",
  pending: "Waiting for you",
  not_found: "Not found",
  sign_in_needed: "Needs sign-in",
  outcome_unknown: "Outcome unknown",
  in_progress: "In progress",
};

// statusWords turns a status word into plain words (unknown statuses are shown as they are).
export function statusWords(status: string): string {
  return STATUS_WORDS[status] ?? status.replace(/_/g, " ");
}

// statusKind groups statuses for styling: attention (the user is involved), problem, ok.
export function statusKind(status: string): "attention" | "problem" | "ok" {
  if (["waiting_for_user", "asked_user", "pending", "outcome_unknown", "in_progress", "sign_in_needed"].includes(status)) return "attention";
  if (["refused", "error", "failed", "not_found", "discovery_failed", "timeout"].includes(status) || status.startsWith("refused")) return "problem";
  return "ok";
}

// timeOf shows the local time of an RFC 3339 instant (HH:MM:SS), or the text as given.
export function timeOf(at: string): string {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return at;
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

// reportWords says how the Company answered a report.
export function reportWords(status: string): string {
  if (status === "alternative") return "accepted; the Company answered with another way to do it";
  if (status === "sending") return "being sent";
  return "accepted";
}

export function durationOf(ms: number): string {
  return ms < 1000 ? `${Math.max(0, Math.round(ms))} ms` : `${(ms / 1000).toFixed(1)} s`;
}

// ---- the view ----

export const ACTIVITY_LIMIT = 200;

export function activityView(backend: ActivityBackend): SectionView {
  return (host, ctx) => {
    const heading = el("h2", { class: "section-title", id: "activity-title" }, "Activity: what your model asked");
    const where = el("p", { class: "activity-where", id: "activity-where" });
    const body = el("div", { class: "activity-body", "aria-live": "polite" });
    const reports = el("div", { class: "activity-reports", id: "activity-reports" });
    host.replaceChildren(
      el("section", { class: "activity", "aria-labelledby": "activity-title" }, heading, where, body),
      el(
        "section",
        { class: "activity", "aria-labelledby": "activity-reports-title" },
        el("h2", { class: "section-title", id: "activity-reports-title" }, "Reports sent to Companies"),
        reports,
      ),
    );
    const renderReports = (list: FeedbackReport[]) => {
      if (list.length === 0) {
        reports.replaceChildren(el("p", { class: "activity-where" }, "No report of a task Poppydesk could not do has been sent."));
        return;
      }
      reports.replaceChildren(
        el(
          "ul",
          { class: "activity-report-list" },
          ...list.map((r) =>
            el(
              "li",
              { class: "activity-report" },
              el("p", {}, el("time", { datetime: r.at }, timeOf(r.at)), ` · ${r.company} · ${reportWords(r.status)}`),
              el("p", { class: "activity-report-task" }, r.task),
              el("p", { class: "activity-report-description" }, r.description),
            ),
          ),
        ),
      );
    };
    let gen = 0;
    const render = (list: ActivityEntry[]) => {
      if (list.length === 0) {
        const e = ctx.empty();
        const title = e.querySelector(".empty-title");
        const text = e.querySelector(".empty-text");
        if (title) title.textContent = "Your model has not asked anything yet";
        if (text)
          text.textContent =
            "When an MCP client such as your AI assistant uses Poppydesk, each request appears here: which tool, for which Company, when, and how it ended. Your model can ask; only you approve.";
        body.replaceChildren(e);
        return;
      }
      const rows = list.map((a) =>
        el(
          "tr",
          { "data-seq": a.seq, class: `activity-row status-${statusKind(a.status)}` },
          el("td", { class: "activity-time" }, el("time", { datetime: a.at }, timeOf(a.at))),
          el("td", { class: "activity-tool" }, a.tool),
          el("td", { class: "activity-company" }, a.company || "—"),
          el("td", { class: "activity-status" }, statusWords(a.status)),
          el("td", { class: "activity-duration" }, durationOf(a.durationMs)),
        ),
      );
      body.replaceChildren(
        el(
          "table",
          { class: "terms activity-table", "aria-label": "Requests from your model, newest first" },
          el(
            "thead",
            {},
            el("tr", {}, ...["Time", "Tool", "Company", "Result", "Took"].map((h) => el("th", { scope: "col" }, h))),
          ),
          el("tbody", {}, ...rows),
        ),
      );
    };
    const load = async () => {
      const mine = ++gen;
      backend.reports().then(
        (list) => {
          if (mine === gen) renderReports(list ?? []);
        },
        (err) => {
          if (mine === gen) reports.replaceChildren(el("p", { class: "activity-where" }, "The reports could not be read: " + describeError(err)));
        },
      );
      try {
        const list = (await backend.list(ACTIVITY_LIMIT)) ?? [];
        if (mine === gen) render(list);
      } catch (err) {
        if (mine !== gen) return;
        const e = ctx.empty();
        e.classList.add("problem");
        const text = e.querySelector(".empty-text");
        if (text) text.textContent = "The model's activity could not be read: " + describeError(err);
        body.replaceChildren(e);
      }
    };
    backend
      .info()
      .then((i) => {
        where.textContent = i.listening
          ? `MCP clients reach Poppydesk with the command “poppydesk mcp” (socket ${i.socket}).`
          : `The model interface is off: ${i.problem || "it did not start"}.`;
      })
      .catch(() => {
        where.textContent = "";
      });
    const off = backend.on(EVENTS.activityChanged, () => void load());
    void load();
    return () => {
      gen++;
      off();
    };
  };
}
