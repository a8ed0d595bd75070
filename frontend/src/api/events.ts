// The events Go pushes to the window, named once (each mirrors an Event* constant in app/), and
// the one way to listen to them.

import type { ExampleAgentRun, FlowView } from "./types";

export const EVENTS = {
  // app.EventStatus: the status line's text.
  shellStatus: "shell:status",
  // app.EventSections: the section counts changed; call Shell.Sections again.
  shellSections: "shell:sections",
  // app.EventApprovalsChanged: an approval was created or changed.
  approvalsChanged: "approvals:changed",
  // app.EventExampleAgent: the example agent said something or finished.
  exampleAgent: "approvals:example-agent",
  // app.EventSignInFlow: a sign-in flow changed.
  signInFlow: "signin:flow",
  // app.EventSignInRequests: the model's sign-in requests changed; call SignIn.Requests again.
  signInRequests: "signin:requests",
  // app.EventCompaniesChanged: the known Companies or their accounts changed.
  companiesChanged: "companies:changed",
  // app.EventConversationsChanged: a conversation changed.
  conversationsChanged: "conversations:changed",
  // app.EventBrowser: the controlled browser changed; call Browser.State again.
  browserChanged: "browser:changed",
  // app.EventActivity: the model made a request; call Activity.List again.
  activityChanged: "activity:changed",
  // app.EventInspector: an exchange or a finding was recorded; call Inspector.List again.
  inspectorChanged: "inspector:changed",
  // app.EventWindowCloseRequested: the desktop window asks before it closes while approvals
  // wait (app/cli/window_wails.go).
  windowCloseRequested: "window:close-requested",
  // app.EventWindowCloseConfirmed: the page's answer, sent to Go (confirmClose), when the user
  // closes anyway.
  windowCloseConfirmed: "window:close-confirmed",
} as const;

export type EventName = (typeof EVENTS)[keyof typeof EVENTS];

// ApprovalChange is the data of approvals:changed (app.ApprovalChange). Wails generates models
// only for the types of bound methods, so the data of events is declared here.
export interface ApprovalChange {
  kind: string; // "created", "revision" or "state"
  id: string;
  state: string;
}

// ConversationChange is the data of conversations:changed (app.ConversationChange). For
// "delta", text is the text so far of message messageId, already made visible.
export interface ConversationChange {
  kind: string;
  company: string;
  conversationId: string;
  messageId?: string;
  text?: string;
}

// EventData is what each event carries (undefined: nothing).
export interface EventData {
  "shell:status": string;
  "shell:sections": undefined;
  "approvals:changed": ApprovalChange;
  "approvals:example-agent": ExampleAgentRun;
  "signin:flow": FlowView;
  "signin:requests": undefined;
  "companies:changed": undefined;
  "conversations:changed": ConversationChange;
  "browser:changed": undefined;
  "activity:changed": undefined;
  "inspector:changed": undefined;
  "window:close-requested": CloseRequest;
  "window:close-confirmed": undefined;
}

// CloseRequest is the data of window:close-requested: how many approvals wait.
export interface CloseRequest {
  waiting: number;
}

// A listener gets the event's data, or undefined when an emitter sent none.
export type Listener<E extends EventName> = (data: EventData[E] | undefined) => void;

// Subscribe listens to an event until the returned function is called.
export type Subscribe = <E extends EventName>(name: E, cb: Listener<E>) => () => void;

// onEvent listens through the runtime (Wails, or the bridge's shim). A window without a runtime
// (a unit test's jsdom) has no events; its unsubscribe does nothing.
export const onEvent: Subscribe = (name, cb) => {
  const off = window.runtime?.EventsOnMultiple(name, cb, -1);
  return typeof off === "function" ? off : () => {};
};
