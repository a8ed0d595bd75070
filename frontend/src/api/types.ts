// The data the Go services send to the window, typed by the models Wails generates from the Go
// structs (wailsjs/go/models.ts). Those are classes with a converter method, and they describe
// what Go declares rather than what JSON carries, so the window uses them through Data: the same
// fields, no methods, and null wherever Go may encode nil (a slice, or a pointer the generated
// class marks optional). A plain object literal or a parsed JSON value fits Data without a cast.
//
// A few Go types have no faithful TypeScript in the generated models; they are corrected here,
// once, with Override:
//   - json.RawMessage is generated as number[] (its Go type is []byte), but JSON carries the
//     raw value itself: RawJSON.
//   - time.Time is generated as any; Go encodes it as an RFC 3339 string.
//   - fields tagged omitzero are generated as required; Go leaves them out when zero.

import type { app, inspect, oauth, operations } from "../../wailsjs/go/models";

type Method = (...args: never[]) => unknown;

// Data is the JSON shape of a generated model T.
export type Data<T> = T extends Method
  ? never
  : T extends readonly (infer E)[]
    ? Data<E>[] | null
    : T extends object
      ? { [K in keyof T as T[K] extends Method ? never : K]: undefined extends T[K] ? Data<T[K]> | null : Data<T[K]> }
      : T;

// Override replaces the fields of T named in O.
type Override<T, O> = Omit<T, keyof O> & O;

// RawJSON is a json.RawMessage: any JSON value, as the Company wrote it.
export type RawJSON = unknown;

// ---- app.Shell ----
export type AppInfo = Data<app.AppInfo>;
export type Section = Data<app.Section>;
export type Preferences = Data<app.Preferences>;

// ---- app.Approvals ----
export type SummaryInline = Data<operations.Inline>;
export type SummaryBlock = Data<operations.Block>;
export type SummaryWarning = Data<operations.SummaryWarning>;
export type Summary = Data<operations.Summary>;
export type TermRow = Data<app.TermRow>;
export type ApprovalRevision = Data<app.ApprovalRevision>;
export type TextChange = Data<operations.TextChange>;
export type TermChange = Override<Data<operations.TermChange>, { old?: RawJSON; new?: RawJSON }>;
export type Changes = Override<
  Data<operations.Changes>,
  { terms?: TermChange[] | null; old_expires_at?: string; new_expires_at?: string }
>;
export type TermsWarning = Override<Data<operations.Warning>, { term_value?: RawJSON; request_value?: RawJSON }>;
export type ApprovalRequest = Data<app.ApprovalRequest>;
export type Outcome = Data<app.Outcome>;
export type ApprovalItem = Override<Data<app.ApprovalItem>, { changes?: Changes | null; warnings: TermsWarning[] | null }>;
// ApprovalRow is an approval as the list shows it; opening it reads the ApprovalItem.
export type ApprovalRow = Data<app.ApprovalRow>;
export type ApprovalPage = Override<Data<app.ApprovalPage>, { items: ApprovalRow[] | null }>;
export type ApprovalsStatus = Data<app.ApprovalsStatus>;
export type ExampleAgentRun = Data<app.ExampleAgentRun>;
export type DialogStep = Data<app.DialogStep>;

// ---- app.SignIn and app.Companies ----
export type ScopeInfo = Data<oauth.ScopeInfo>;
export type PlanScope = Data<app.PlanScope>;
export type SignInOffer = Data<app.SignInOffer>;
export type CompanyCard = Data<app.CompanyCard>;
export type AccountStatus = Data<oauth.AccountStatus>;
export type ModelRequest = Override<Data<app.ModelRequest>, { requested: string }>;
export type SignInPlan = Override<Data<app.SignInPlan>, { request?: ModelRequest | null }>;
export type DeviceView = Data<app.DeviceView>;
export type FlowView = Override<Data<app.FlowView>, { deadline: string }>;
export type ExcludedTaskEntry = Data<app.ExcludedTaskEntry>;
export type CompanyEntry = Data<app.CompanyEntry>;
export type CompanyList = Data<app.CompanyList>;

// ---- app.Conversations ----
export type ConversationAuthor = Data<app.ConversationAuthor>;
export type ConversationEntry = Data<app.ConversationEntry>;
export type ConversationInvite = Data<app.ConversationInvite>;
export type ConversationWriting = Data<app.ConversationWriting>;
export type ConversationState = Data<app.ConversationState>;
export type ConversationPage = Data<app.ConversationPage>;
export type ConversationCompany = Data<app.ConversationCompany>;
export type ConversationsStatus = Data<app.ConversationsStatus>;

// ---- app.Browser and app.Activity ----
export type BrowserState = Data<app.BrowserState>;
export type ActivityEntry = Data<app.ActivityEntry>;
export type ActivityInfo = Data<app.ActivityInfo>;
export type FeedbackReport = Data<app.FeedbackReport>;

// ---- app.Inspector and app.Settings ----
export type InspectorQuery = Data<app.InspectorQuery>;
export type InspectorRow = Data<app.InspectorRow>;
export type InspectorPage = Data<app.InspectorPage>;
export type InspectorEntry = Data<app.InspectorEntry>;
export type InspectorToken = Data<app.InspectorToken>;
export type InspectorHeader = Data<app.InspectorHeader>;
export type InspectorFault = Data<app.InspectorFault>;
export type Finding = Override<Data<inspect.Finding>, { at?: string }>;
export type SettingsView = Data<app.SettingsView>;
export type DeveloperView = Data<app.DeveloperView>;
export type IdentityInfo = Data<app.IdentityInfo>;
export type OperatorStatus = Data<app.OperatorStatus>;
