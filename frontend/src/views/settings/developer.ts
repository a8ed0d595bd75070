// Settings → Developer mode: the Companies under development (by domain, loopback names only)
// and the CA trusted for their hosts only. Saved for the next start; while it is on, the
// client_id to register at the Company and the CA the Company must trust to fetch it.

import type { SettingsAPI, SettingsView } from "../../api";
import { describeError } from "../../api";
import { el } from "../../dom";

export function developerSection(backend: SettingsAPI, v: SettingsView, rerender: (v: SettingsView) => void): HTMLElement {
  const d = v.developer;
  const companies = el("input", {
    type: "text",
    id: "dev-companies",
    placeholder: "shop.localhost:8443",
    value: (d.saved_companies ?? []).join(", "),
    "aria-describedby": "dev-help",
  });
  const ca = el("input", { type: "text", id: "dev-ca", placeholder: "/home/you/.local/share/mkcert/rootCA.pem", value: d.saved_ca_file });
  const save = el("button", { type: "button", class: "button primary", id: "dev-save" }, "Save");
  const off = el("button", { type: "button", class: "button", id: "dev-off" }, "Turn off");
  const msg = el("p", { class: "dev-msg", id: "dev-msg", "aria-live": "polite" });
  save.addEventListener("click", () => {
    const list = companies.value
      .split(/[,\s]+/)
      .map((s) => s.trim())
      .filter(Boolean);
    backend.setDeveloper(list, ca.value.trim()).then(rerender, (err) => (msg.textContent = describeError(err)));
  });
  off.addEventListener("click", () => backend.disableDeveloper().then(rerender, (err) => (msg.textContent = describeError(err))));
  if (d.restart_needed) msg.textContent = "Saved. Restart Poppydesk to apply developer mode: the engine's network rules and identity are fixed while it runs.";
  if (d.problem) msg.textContent = d.problem;
  const facts = el("dl", { class: "facts", id: "dev-facts" });
  const row = (k: string, val: string, id: string) => facts.append(el("dt", {}, k), el("dd", { id, class: "path" }, val || "—"));
  if (d.active) {
    row("Companies", (d.companies ?? []).join(", "), "dev-active-companies");
    row("Hosts that may reach loopback", (d.hosts ?? []).join(", "), "dev-active-hosts");
    row("CA trusted for them only", d.ca_file, "dev-active-ca");
    if (d.client_id) {
      row("client_id to register at your Company", d.client_id, "dev-client-id");
      row("CA your Company must trust to fetch it", d.agent_ca_file, "dev-agent-ca");
    }
  }
  return el(
    "section",
    { class: "card settings-section", id: "settings-developer", "aria-labelledby": "dev-title" },
    el("h2", { id: "dev-title" }, "Developer mode", d.active ? el("span", { class: "dev-on" }, " on") : null),
    el(
      "p",
      { id: "dev-help" },
      "Aim Poppydesk at a Company you are building on this machine. Name it by its domain (localhost, a name under .localhost, or 127.0.0.1, with a port). Its host and subdomains may reach loopback, and the CA file is trusted for those hosts only; every other host keeps the normal rules.",
    ),
    d.demo ? el("p", {}, "The demo runs the reference Company this way already.") : null,
    facts,
    el("label", { for: "dev-companies" }, "Companies under development"),
    companies,
    el("label", { for: "dev-ca" }, "CA certificate file (PEM)"),
    ca,
    el("div", { class: "actions" }, save, off),
    msg,
  );
}
