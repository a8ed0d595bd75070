import "./style.css";
import * as api from "./api";
import { mountShell } from "./app";
import { approvalsView } from "./views/approvals";
import { signInView } from "./views/signin";
import { companiesView } from "./views/companies";
import { activityView } from "./views/activity";
import { browserView } from "./views/browser";
import { conversationsView } from "./views/conversations";
import { settingsView } from "./views/settings";

mountShell(document, api.shell, {
  approvals: approvalsView(api.approvals, { raise: api.raiseWindow }),
  signin: signInView(api.signIn),
  companies: companiesView(api.companies),
  browser: browserView(api.browser),
  conversations: conversationsView(api.conversations),
  inspector: activityView(api.activity), // the model's activity (agentcore/modelapi)
  settings: settingsView(api.shell),
});
