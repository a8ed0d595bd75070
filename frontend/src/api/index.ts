// The one way the window reaches Go: the bound services, their data types, the events and the
// wording of failures. Views import from here, never from wailsjs/ or window.go.

export * from "./types";
export { EVENTS, onEvent, type ApprovalChange, type CloseRequest, type ConversationChange, type EventData, type EventName, type Listener, type Subscribe } from "./events";
export { describeError } from "./errors";
export { confirmClose, quitWindow } from "./runtime";
export * from "./services";
