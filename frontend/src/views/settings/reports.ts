// Settings › Reports to Companies: whether Poppydesk may tell a Company about a task your agent
// could not do there (spec 9.3). Go keeps the setting; a report never carries a secret or an
// identifier Poppydesk knows, and every report sent is listed in the Inspector's Model activity.

import { describeError } from "../../api";
import { el } from "../../dom";
import type { SettingsSection } from "./index";

const OFF_NOTE = "Reports are off: Poppydesk sends no Company a report of a task it could not do.";

export const reportsSection: SettingsSection = {
  id: "settings-reports",
  title: "Reports to Companies",
  render(body, { shell, prefs }) {
    const box = el("input", { type: "checkbox", id: "reports-on", checked: true });
    const note = el("p", { class: "muted settings-note", id: "reports-note", "aria-live": "polite" });
    box.addEventListener("change", () => {
      box.disabled = true;
      shell.setFeedbackReports(box.checked).then(
        () => {
          box.disabled = false;
          note.textContent = box.checked ? "" : OFF_NOTE;
        },
        (err) => {
          box.disabled = false;
          box.checked = !box.checked;
          note.textContent = `The setting could not be saved: ${describeError(err)}`;
        },
      );
    });
    body.append(
      el(
        "label",
        { class: "settings-choice", for: "reports-on" },
        box,
        el("span", {}, "Let my agent tell a Company about a task it could not do there"),
      ),
      el(
        "p",
        { class: "muted settings-note" },
        "One short report per task and Company, without your sign-ins, order numbers, account names, email addresses or phone numbers. Every report sent is listed in Inspector › Model activity.",
      ),
      note,
    );
    if (prefs?.feedbackReportsProblem) {
      box.disabled = true;
      note.textContent = prefs.feedbackReportsProblem;
    } else if (prefs) {
      box.checked = prefs.feedbackReports;
      if (!prefs.feedbackReports) note.textContent = OFF_NOTE;
    }
  },
};
