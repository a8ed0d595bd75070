// Settings › Notifications: desktop notifications for approvals and sign-in requests, shown only
// while the window is in the background (Go decides; the window tells it about its focus).

import { describeError } from "../../api";
import { el } from "../../dom";
import type { SettingsSection } from "./index";

export const notificationsSection: SettingsSection = {
  id: "settings-notifications",
  title: "Notifications",
  render(body, { shell, prefs }) {
    const box = el("input", { type: "checkbox", id: "notifications-on", checked: true });
    const note = el("p", { class: "muted settings-note", id: "notifications-note", "aria-live": "polite" });
    box.addEventListener("change", () => {
      box.disabled = true;
      shell.setNotifications(box.checked).then(
        () => {
          box.disabled = false;
          note.textContent = box.checked ? "" : "Notifications are off. The badges in the sidebar still show what is waiting.";
        },
        (err) => {
          box.disabled = false;
          box.checked = !box.checked;
          note.textContent = `The setting could not be saved: ${describeError(err)}`;
        },
      );
    });
    body.append(
      el("label", { class: "settings-choice", for: "notifications-on" }, box, el("span", {}, "Show a desktop notification when an approval or a sign-in waits for you")),
      el("p", { class: "muted settings-note" }, "Only while Poppydesk is in the background: when its window has the focus, you see the request there."),
      note,
    );
    if (prefs) {
      box.checked = prefs.notifications;
      if (!prefs.notifications) note.textContent = "Notifications are off. The badges in the sidebar still show what is waiting.";
    }
  },
};
