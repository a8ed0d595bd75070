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

import type { fronts, inspect, oauth, operations } from "../../wailsjs/go/models";

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

// ---- fronts.Shell ----
export type AppInfo = Data<fronts.AppInfo>;
export type Section = Data<fronts.Section>;
export type Preferences = Data<fronts.Preferences>;

// ---- fronts.Approvals ----
export type SummaryInline = Data<operations.Inline>;
export type SummaryBlock = Data<operations.Block>;
export type SummaryWarning = Data<operations.SummaryWarning>;
export type Summary = Data<operations.Summary>;
export type TermRow = Data<fronts.TermRow>;
export type ApprovalRevision = Data<fronts.ApprovalRevision>;
export type TextChange = Data<operations.TextChange>;
export type TermChange = Override<Data<operations.TermChange>, { old?: RawJSON; new?: RawJSON }>;
export type Changes = Override<
  Data<operations.Changes>,
  { terms?: TermChange[] | null; old_expires_at?: string; new_expires_at?: string }
>;
export type TermsWarning = Override<Data<operations.Warning>, { term_value?: RawJSON; request_value?: RawJSON }>;
export type ApprovalRequest = Data<fronts.ApprovalRequest>;
export type Outcome = Data<fronts.Outcome>;
export type ApprovalItem = Override<Data<fronts.ApprovalItem>, { changes?: Changes | null; warnings: TermsWarning[] | null }>;
// ApprovalRow is an approval as the list shows it; opening it reads the ApprovalItem.
export type ApprovalRow = Data<fronts.ApprovalRow>;
export type ApprovalPage = Override<Data<fronts.ApprovalPage>, { items: ApprovalRow[] | null }>;
export type ApprovalsStatus = Data<fronts.ApprovalsStatus>;
export type ExampleAgentRun = Data<fronts.ExampleAgentRun>;
export type DialogStep = Data<fronts.DialogStep>;

// ---- fronts.SignIn and fronts.Companies ----
export type ScopeInfo = Data<oauth.ScopeInfo>;
export type PlanScope = Data<fronts.PlanScope>;
export type SignInOffer = Data<fronts.SignInOffer>;
export type CompanyCard = Data<fronts.CompanyCard>;
export type AccountStatus = Data<oauth.AccountStatus>;
export type ModelRequest = Override<Data<fronts.ModelRequest>, { requested: string }>;
export type SignInPlan = Override<Data<fronts.SignInPlan>, { request?: ModelRequest | null }>;
export type DeviceView = Data<fronts.DeviceView>;
export type FlowView = Override<Data<fronts.FlowView>, { deadline: string }>;
export type ExcludedTaskEntry = Data<fronts.ExcludedTaskEntry>;
export type CompanyEntry = Data<fronts.CompanyEntry>;
export type CompanyList = Data<fronts.CompanyList>;

// ---- fronts.Conversations ----
export type ConversationAuthor = Data<fronts.ConversationAuthor>;
export type ConversationEntry = Data<fronts.ConversationEntry>;
export type ConversationInvite = Data<fronts.ConversationInvite>;
export type ConversationWriting = Data<fronts.ConversationWriting>;
export type ConversationState = Data<fronts.ConversationState>;
export type ConversationPage = Data<fronts.ConversationPage>;
export type ConversationCompany = Data<fronts.ConversationCompany>;
export type ConversationsStatus = Data<fronts.ConversationsStatus>;

// ---- fronts.Browser and fronts.Activity ----
export type BrowserState = Data<fronts.BrowserState>;
export type ActivityEntry = Data<fronts.ActivityEntry>;
export type ActivityInfo = Data<fronts.ActivityInfo>;
export type FeedbackReport = Data<fronts.FeedbackReport>;

// ---- fronts.Inspector and fronts.Settings ----
export type InspectorQuery = Data<fronts.InspectorQuery>;
export type InspectorRow = Data<fronts.InspectorRow>;
export type InspectorPage = Data<fronts.InspectorPage>;
export type InspectorEntry = Data<fronts.InspectorEntry>;
export type InspectorToken = Data<fronts.InspectorToken>;
export type InspectorHeader = Data<fronts.InspectorHeader>;
export type InspectorFault = Data<fronts.InspectorFault>;
export type InspectorResend = Data<fronts.InspectorResend>;
export type InspectorResent = Data<fronts.InspectorResent>;
export type InspectorFlow = Data<fronts.InspectorFlow>;
export type InspectorStep = Data<fronts.InspectorStep>;
export type Finding = Override<Data<inspect.Finding>, { at?: string }>;
export type SettingsView = Data<fronts.SettingsView>;
export type DeveloperView = Data<fronts.DeveloperView>;
export type IdentityInfo = Data<fronts.IdentityInfo>;
export type OperatorStatus = Data<fronts.OperatorStatus>;
