// Settings → Identity: the identity Poppydesk signs with (spec 4.1), read only.

import type { SettingsView } from "../../api";
import { el } from "../../dom";

export function identitySection(v: SettingsView): HTMLElement {
  const dl = el("dl", { class: "facts", id: "identity-facts" });
  dl.append(el("dt", {}, "client_id"), el("dd", { class: "path", id: "identity-client-id" }, v.identity.client_id || "none yet"));
  dl.append(el("dt", {}, "System keyring"), el("dd", { id: "identity-keyring" }, v.identity.keyring || "—"));
  return el(
    "section",
    { class: "card settings-section", id: "settings-identity", "aria-labelledby": "identity-title" },
    el("h2", { id: "identity-title" }, "Identity"),
    dl,
    v.identity.problem ? el("p", { class: "problem" }, v.identity.problem) : null,
  );
}
