import "./style.css";
import * as api from "./api";
import { mountShell } from "./app";
import { approvalsView, goApprovals, raiseWindow } from "./views/approvals";
import { goSignIn, signInView } from "./views/signin"; // sign-in screens
import { companiesView, goCompanies } from "./views/companies"; // sign-in screens
import { activityView } from "./views/activity";
import { browserView } from "./views/browser";
import { conversationsView, goConversations } from "./views/conversations"; // conversations (issue 8)

mountShell(document, api.shell, {
  approvals: approvalsView(goApprovals, { raise: raiseWindow }),
  signin: signInView(goSignIn), // sign-in screens
  companies: companiesView(goCompanies), // sign-in screens
  browser: browserView(api.browser),
  conversations: conversationsView(goConversations), // conversations (issue 8)
  inspector: activityView(api.activity), // the model's activity (agentcore/modelapi)
});
