import "./style.css";
import * as api from "./api";
import { mountShell } from "./app";
import { mountClosing } from "./closing";
import { approvalsView } from "./views/approvals";
import { signInView } from "./views/signin";
import { companiesView } from "./views/companies";
import { browserView } from "./views/browser";
import { conversationsView } from "./views/conversations";
import { inspectorView } from "./views/inspector";
import { settingsView } from "./views/settings";

mountShell(document, api.shell, {
  approvals: approvalsView(api.approvals),
  signin: signInView(api.signIn),
  companies: companiesView(api.companies),
  browser: browserView(api.browser),
  conversations: conversationsView(api.conversations),
  // Exchanges, findings, the model's activity (agentcore/modelapi) and, in the demo, its faults.
  inspector: inspectorView(api.inspector, api.activity, () => document.body.classList.contains("demo")),
  settings: settingsView(api.shell, api.settings),
});

// Ctrl+Q, and the question Go asks before the window closes while approvals wait.
mountClosing(document, { on: api.onEvent, quit: api.quitWindow, confirmClose: api.confirmClose });
