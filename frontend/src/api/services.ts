// The bound Go services, one object each, wrapping every method of the generated bindings
// (wailsjs/go/fronts/*): the method's name in lower camel case, the same arguments, a promise of
// its data (types.ts). Each object also carries `on`, the window's one event subscription, so a
// view gets all it needs from Go in one argument and a test fakes it in one object.

import * as Activity from "../../wailsjs/go/fronts/Activity";
import * as Approvals from "../../wailsjs/go/fronts/Approvals";
import * as Browser from "../../wailsjs/go/fronts/Browser";
import * as Companies from "../../wailsjs/go/fronts/Companies";
import * as Conversations from "../../wailsjs/go/fronts/Conversations";
import * as Shell from "../../wailsjs/go/fronts/Shell";
import * as Inspector from "../../wailsjs/go/fronts/Inspector";
import * as Settings from "../../wailsjs/go/fronts/Settings";
import * as SignIn from "../../wailsjs/go/fronts/SignIn";
import { onEvent, type Subscribe } from "./events";
import { call, isBound } from "./runtime";
import type * as T from "./types";

// Wrapping is what a service object must provide for the generated module M: one function per
// bound method, taking that method's arguments. `satisfies` checks that none is missing or extra.
type Wrapping<M> = {
  [K in keyof M as Uncapitalize<K & string>]: M[K] extends (...args: infer A) => unknown ? (...args: A) => Promise<unknown> : never;
};
type Service<M> = Wrapping<M> & { on: Subscribe };

const shellCalls = {
  info: (): Promise<T.AppInfo> => call("Shell", () => Shell.Info()),
  sections: (): Promise<T.Section[] | null> => call("Shell", () => Shell.Sections()),
  status: (): Promise<string> => call("Shell", () => Shell.Status()),
  // frontendReady reports that the window has shown its first data.
  frontendReady: (): Promise<void> => call("Shell", () => Shell.FrontendReady()),
  // The window's settings (theme, notifications) and its focus, for the notifications.
  preferences: (): Promise<T.Preferences> => call("Shell", () => Shell.Preferences()),
  setTheme: (theme: string): Promise<void> => call("Shell", () => Shell.SetTheme(theme)),
  setNotifications: (on: boolean): Promise<void> => call("Shell", () => Shell.SetNotifications(on)),
  // setFeedbackReports turns the reports of tasks the agent could not do (spec 9.3) on or off.
  setFeedbackReports: (on: boolean): Promise<void> => call("Shell", () => Shell.SetFeedbackReports(on)),
  windowFocus: (focused: boolean): Promise<void> => call("Shell", () => Shell.WindowFocus(focused)),
  // resetEverything deletes every key, sign-in and record (the confirmation step's words).
  resetEverything: (confirm: string): Promise<void> => call("Shell", () => Shell.ResetEverything(confirm)),
  // The first run: Get started enrolls with the build's default operator and returns what
  // Companies will see; restartReady starts Poppydesk with it. The demo is entered and left by a
  // restart too; operator is what Companies see once Poppydesk is ready, readyShown reports that
  // the window shows it.
  getStarted: (): Promise<T.OperatorStatus> => call("Shell", () => Shell.GetStarted()),
  restartReady: (): Promise<void> => call("Shell", () => Shell.RestartReady()),
  tryDemo: (): Promise<void> => call("Shell", () => Shell.TryDemo()),
  leaveDemo: (): Promise<void> => call("Shell", () => Shell.LeaveDemo()),
  operator: (): Promise<T.OperatorStatus> => call("Shell", () => Shell.Operator()),
  readyShown: (): Promise<void> => call("Shell", () => Shell.ReadyShown()),
} satisfies Wrapping<typeof Shell>;
export const shell = { ...shellCalls, on: onEvent } satisfies Service<typeof Shell>;
export type ShellAPI = typeof shell;

// A window without fronts.Approvals (an older core, a test page binding only the shell) shows the
// plain empty state: no problem to report and nothing listed.
const approvalsCalls = {
  status: (): Promise<T.ApprovalsStatus> =>
    isBound("Approvals")
      ? call("Approvals", () => Approvals.Status())
      : Promise.resolve({ available: false, problem: "", demo: false, demoCompany: "" }),
  // list reads the open approvals (waiting, being sent, outcome unknown) as rows.
  list: (): Promise<T.ApprovalRow[] | null> => (isBound("Approvals") ? call("Approvals", () => Approvals.List()) : Promise.resolve([])),
  get: (id: string): Promise<T.ApprovalItem> => call("Approvals", () => Approvals.Get(id)),
  // earlier pages through the decided approvals, newest first ("" for the first page).
  earlier: (cursor: string, limit: number): Promise<T.ApprovalPage> =>
    isBound("Approvals") ? call("Approvals", () => Approvals.Earlier(cursor, limit)) : Promise.resolve({ items: [], next: "" }),
  // approve sends the decision for the revision and digest the user saw.
  approve: (id: string, revision: string, digest: string): Promise<T.Outcome> =>
    call("Approvals", () => Approvals.Approve(id, revision, digest)),
  decline: (id: string, revision: string): Promise<void> => call("Approvals", () => Approvals.Decline(id, revision)),
  checkOutcome: (id: string): Promise<T.Outcome> => call("Approvals", () => Approvals.CheckOutcome(id)),
  startDemoExchange: (kind: string): Promise<string> => call("Approvals", () => Approvals.StartDemoExchange(kind)),
  // resetDemo restores the reference Company as at start (demo mode; a user gesture).
  resetDemo: (): Promise<void> => call("Approvals", () => Approvals.ResetDemo()),
  // runExampleAgent starts the scripted example agent (demo mode; a user gesture).
  runExampleAgent: (): Promise<void> => call("Approvals", () => Approvals.RunExampleAgent()),
  exampleAgent: (): Promise<T.ExampleAgentRun> => call("Approvals", () => Approvals.ExampleAgent()),
  // dialogShown reports that the dialog of an approval is on screen, with the steps it took.
  dialogShown: (id: string, steps: T.DialogStep[]): Promise<void> => call("Approvals", () => Approvals.DialogShown(id, steps)),
} satisfies Wrapping<typeof Approvals>;
export const approvals = { ...approvalsCalls, on: onEvent } satisfies Service<typeof Approvals>;
export type ApprovalsAPI = typeof approvals;

const signInCalls = {
  // plan says what a sign-in would ask for; it starts nothing.
  plan: (company: string, account: string, requestId: string): Promise<T.SignInPlan> =>
    call("SignIn", () => SignIn.Plan(company, account, requestId)),
  startDirect: (company: string, account: string, scopes: string[], requestId: string): Promise<T.FlowView> =>
    call("SignIn", () => SignIn.StartDirect(company, account, scopes, requestId)),
  startDevice: (company: string, account: string, scopes: string[], requestId: string): Promise<T.FlowView> =>
    call("SignIn", () => SignIn.StartDevice(company, account, scopes, requestId)),
  cancel: (id: string): Promise<void> => call("SignIn", () => SignIn.Cancel(id)),
  current: (): Promise<T.FlowView | null> => call("SignIn", () => SignIn.Current()),
  flow: (id: string): Promise<T.FlowView> => call("SignIn", () => SignIn.Flow(id)),
  requests: (): Promise<T.ModelRequest[] | null> => call("SignIn", () => SignIn.Requests()),
  dismissRequest: (id: string): Promise<void> => call("SignIn", () => SignIn.DismissRequest(id)),
} satisfies Wrapping<typeof SignIn>;
export const signIn = { ...signInCalls, on: onEvent } satisfies Service<typeof SignIn>;
export type SignInAPI = typeof signIn;

const companiesCalls = {
  // list reads a page of the Companies in name order ("" for the first page).
  list: (cursor: string, limit: number): Promise<T.CompanyList> => call("Companies", () => Companies.List(cursor, limit)),
  discover: (domain: string): Promise<T.CompanyEntry> => call("Companies", () => Companies.Discover(domain)),
  signOut: (company: string, account: string): Promise<void> => call("Companies", () => Companies.SignOut(company, account)),
  forget: (company: string): Promise<void> => call("Companies", () => Companies.Forget(company)),
} satisfies Wrapping<typeof Companies>;
export const companies = { ...companiesCalls, on: onEvent } satisfies Service<typeof Companies>;
export type CompaniesAPI = typeof companies;

const conversationsCalls = {
  status: (): Promise<T.ConversationsStatus> => call("Conversations", () => Conversations.Status()),
  companies: (): Promise<T.ConversationCompany[] | null> => call("Conversations", () => Conversations.Companies()),
  list: (company: string): Promise<T.ConversationState[] | null> => call("Conversations", () => Conversations.List(company)),
  open: (company: string, id: string): Promise<T.ConversationState> => call("Conversations", () => Conversations.Open(company, id)),
  state: (company: string, id: string): Promise<T.ConversationState> => call("Conversations", () => Conversations.State(company, id)),
  entries: (company: string, id: string, from: number, limit: number): Promise<T.ConversationPage> =>
    call("Conversations", () => Conversations.Entries(company, id, from, limit)),
  start: (company: string, text: string): Promise<T.ConversationState> => call("Conversations", () => Conversations.Start(company, text)),
  send: (company: string, id: string, text: string): Promise<T.ConversationState> =>
    call("Conversations", () => Conversations.Send(company, id, text)),
  handoff: (company: string, id: string): Promise<T.ConversationState> => call("Conversations", () => Conversations.Handoff(company, id)),
  close: (company: string, id: string): Promise<T.ConversationState> => call("Conversations", () => Conversations.Close(company, id)),
  // acceptUserRequest is the only way a Direct Conversation is accepted (spec 8.10).
  acceptUserRequest: (company: string, parentId: string, eventId: string): Promise<T.ConversationState> =>
    call("Conversations", () => Conversations.AcceptUserRequest(company, parentId, eventId)),
  declineUserRequest: (company: string, parentId: string, eventId: string): Promise<T.ConversationState> =>
    call("Conversations", () => Conversations.DeclineUserRequest(company, parentId, eventId)),
} satisfies Wrapping<typeof Conversations>;
export const conversations = { ...conversationsCalls, on: onEvent } satisfies Service<typeof Conversations>;
export type ConversationsAPI = typeof conversations;

const browserCalls = {
  state: (): Promise<T.BrowserState> => call("Browser", () => Browser.State()),
  showWindow: (): Promise<void> => call("Browser", () => Browser.ShowWindow()),
} satisfies Wrapping<typeof Browser>;
export const browser = { ...browserCalls, on: onEvent } satisfies Service<typeof Browser>;
export type BrowserAPI = typeof browser;

const activityCalls = {
  list: (limit: number): Promise<T.ActivityEntry[] | null> => call("Activity", () => Activity.List(limit)),
  info: (): Promise<T.ActivityInfo> => call("Activity", () => Activity.Info()),
  // reports are the reports of unsupported tasks sent to Companies, as sent (spec 9.3).
  reports: (): Promise<T.FeedbackReport[] | null> => call("Activity", () => Activity.Reports()),
} satisfies Wrapping<typeof Activity>;
export const activity = { ...activityCalls, on: onEvent } satisfies Service<typeof Activity>;
export type ActivityAPI = typeof activity;

const inspectorCalls = {
  list: (q: T.InspectorQuery): Promise<T.InspectorPage> => call("Inspector", () => Inspector.List(q as never)),
  entry: (id: number): Promise<T.InspectorEntry> => call("Inspector", () => Inspector.Entry(id)),
  exportHAR: (ids: number[]): Promise<string> => call("Inspector", () => Inspector.ExportHAR(ids)),
  exportCurl: (ids: number[]): Promise<string> => call("Inspector", () => Inspector.ExportCurl(ids)),
  findings: (): Promise<T.Finding[] | null> => call("Inspector", () => Inspector.Findings()),
  faults: (): Promise<T.InspectorFault[] | null> => call("Inspector", () => Inspector.Faults()),
  setFault: (name: string, on: boolean): Promise<T.InspectorFault[] | null> => call("Inspector", () => Inspector.SetFault(name, on)),
  // resend sends an exchange again as edited, re-signed by the pipeline (developer mode only).
  resend: (r: T.InspectorResend): Promise<T.InspectorResent> => call("Inspector", () => Inspector.Resend(r as never)),
  // flows groups the timeline into flows with their sequence diagrams, newest first.
  flows: (limit: number): Promise<T.InspectorFlow[] | null> => call("Inspector", () => Inspector.Flows(limit)),
} satisfies Wrapping<typeof Inspector>;
export const inspector = { ...inspectorCalls, on: onEvent } satisfies Service<typeof Inspector>;
export type InspectorAPI = typeof inspector;

const settingsCalls = {
  view: (): Promise<T.SettingsView> => call("Settings", () => Settings.View()),
  // setDeveloper saves developer mode for the next start (a user gesture in Settings).
  setDeveloper: (companies: string[], caFile: string): Promise<T.SettingsView> =>
    call("Settings", () => Settings.SetDeveloper(companies, caFile)),
  disableDeveloper: (): Promise<T.SettingsView> => call("Settings", () => Settings.DisableDeveloper()),
  // Settings → Identity: the identity Companies see; an operator enrolled by URL takes effect at
  // the next start, and so does going back to the own identity.
  identity: (): Promise<T.IdentityInfo> => call("Settings", () => Settings.Identity()),
  enrollOperator: (url: string, token: string): Promise<T.IdentityInfo> => call("Settings", () => Settings.EnrollOperator(url, token)),
  checkOperator: (): Promise<T.OperatorStatus> => call("Settings", () => Settings.CheckOperator()),
  useOwnIdentity: (): Promise<T.IdentityInfo> => call("Settings", () => Settings.UseOwnIdentity()),
} satisfies Wrapping<typeof Settings>;
export const settings = { ...settingsCalls, on: onEvent } satisfies Service<typeof Settings>;
export type SettingsAPI = typeof settings;
