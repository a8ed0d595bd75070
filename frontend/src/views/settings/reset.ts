// Settings › Reset everything: what `poppydesk reset --yes` does, run by Go in this process after
// a confirmation step: the engine stops, every keyring item and the state database are deleted,
// and the user is told to start Poppydesk again.

import { describeError } from "../../api";
import { el } from "../../dom";
import type { SettingsSection } from "./index";

// RESET_CONFIRMATION matches fronts.ResetConfirmation: Go runs the reset only with these words.
export const RESET_CONFIRMATION = "delete every key, sign-in and record";

export const resetSection: SettingsSection = {
  id: "settings-reset",
  title: "Reset everything",
  render(body, { shell, view, info }) {
    const text = el(
      "p",
      {},
      "Deletes every key, sign-in and record Poppydesk keeps: the identity’s keys and your sign-ins in the system keyring, and the state database (Companies, approvals, conversations, settings). The log files stay. A published identity then names a key that no longer exists: export a new one.",
    );
    const note = el("p", { class: "settings-note", id: "reset-note", role: "status" });
    const actions = el("div", { class: "settings-actions" });
    const start = el("button", { type: "button", class: "btn btn-danger", id: "reset-start" }, "Reset everything…");
    const done = () => {
      actions.replaceChildren();
      note.textContent = "Poppydesk was reset: no keys, sign-ins or records are left. Quit Poppydesk and start it again.";
      view.setStatus("Poppydesk was reset. Quit it and start it again.");
    };
    if (info?.reset) {
      body.append(text, note);
      done();
      return;
    }
    start.addEventListener("click", () => {
      const yes = el("button", { type: "button", class: "btn btn-danger", id: "reset-confirm" }, "Delete everything now");
      const no = el("button", { type: "button", class: "btn btn-secondary", id: "reset-cancel" }, "Cancel");
      note.textContent = "This cannot be undone. Delete everything?";
      no.addEventListener("click", () => {
        note.textContent = "";
        actions.replaceChildren(start);
        start.focus();
      });
      yes.addEventListener("click", () => {
        yes.disabled = no.disabled = true;
        note.textContent = "Deleting…";
        shell.resetEverything(RESET_CONFIRMATION).then(done, (err) => {
          note.textContent = `Reset everything failed: ${describeError(err)}`;
          actions.replaceChildren(start);
        });
      });
      actions.replaceChildren(no, yes);
      no.focus();
    });
    actions.append(start);
    body.append(text, actions, note);
  },
};
