// Settings › This installation: the identity Poppydesk signs with, whether the system keyring is
// reachable, and where its files live.

import type { AppInfo } from "../../api";
import { append, el } from "../../dom";
import type { SettingsSection } from "./index";

// identityWords says whose identity Poppydesk uses, in words.
export function identityWords(info: AppInfo): string {
  switch (info.identityMode) {
    case "demo":
      return "The demo’s own identity, published on this computer for the reference Company only";
    case "operator":
      return `Published by your operator${info.operator ? ` at ${info.operator}` : ""}`;
    case "self":
      return "Your own published identity";
    default:
      return "None yet: Poppydesk cannot act at Companies (see Approvals for how to start)";
  }
}

// keyringSentence says what is true of the system keyring.
export function keyringSentence(keyring: string): string {
  switch (keyring) {
    case "connected":
      return "Connected: Poppydesk keeps its keys and your sign-ins there.";
    case "locked":
      return "Locked: unlock your login keyring, then restart Poppydesk.";
    case "not available":
      return "Not available: no Secret Service answers (GNOME Keyring, or KeePassXC with its Secret Service integration). Start one, then restart Poppydesk.";
    case "demo (in memory)":
      return "Not used by the demo: its keys and sign-ins stay in memory and end with it.";
    default:
      return keyring;
  }
}

export const installationSection: SettingsSection = {
  id: "settings-installation",
  title: "This installation",
  render(body, { info }) {
    const dl = el("dl", { class: "facts", id: "app-facts" });
    if (!info) {
      append(dl, [el("dt", {}, "Application"), el("dd", {}, "Loading…")]);
      body.append(dl);
      return;
    }
    // [label, value, element id, shown in monospace, a value under it]
    const rows: [string, string, string, boolean, string?][] = [
      ["Version", info.version, "info-version", false],
      ["Identity", identityWords(info), "info-identity", false, info.identity],
      ["System keyring", keyringSentence(info.keyring), "info-keyring", false],
      ["Protocol", info.protocol, "info-protocol", false],
    ];
    if (info.demo) rows.push(["Demo", info.demo, "info-demo", false]);
    rows.push(
      ["Data folder", info.dataDir, "info-data", true],
      ["State database", info.stateFile, "info-state", true],
      ["Settings folder", info.configDir, "info-config", true],
      ["Log file", info.logFile, "info-log", true],
      ["Model socket (MCP)", info.socket || "not listening (the Inspector says why)", "info-socket", !!info.socket],
    );
    for (const [k, v, id, mono, under] of rows) {
      const dd = el("dd", { id, class: mono ? "path" : undefined }, v);
      if (under) dd.append(el("span", { class: "path facts-under" }, under));
      append(dl, [el("dt", {}, k), dd]);
    }
    body.append(dl);
  },
};
