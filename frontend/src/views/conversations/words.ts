// A conversation's people and state in plain words (spec 8.7): who wrote a message, the status
// and who handles the conversation.

import type { ConversationAuthor, ConversationState } from "../../api";

// authorLabel says who wrote a message.
export function authorLabel(a: ConversationAuthor | null | undefined, companyName: string): string {
  const co = companyName || "the Company";
  switch (a?.kind) {
    case "model":
      return "Your agent";
    case "user":
      return "You";
    case "company-agent":
      return `${co}’s agent`;
    case "company-person":
      return a.name ? `${a.name} (a person at ${co})` : `A person at ${co}`;
    default:
      return co;
  }
}

// statusWords says the status in plain words (spec 8.7; unknown values arrive as "working").
export function statusWords(status: string): string {
  switch (status) {
    case "idle":
      return "waiting for your reply";
    case "queued":
      return "queued for a person";
    case "closed":
      return "closed";
    default:
      return "working";
  }
}

// responderWords says who handles the conversation (spec 8.7; unknown arrives as "human").
export function responderWords(responder: string, companyName: string): string {
  return responder === "agent" ? `${companyName || "the Company"}’s agent is handling this` : "a person is handling this";
}

export function stateLine(s: Pick<ConversationState, "status" | "responder">, companyName: string): string {
  if (s.status === "closed") return "Closed";
  const st = statusWords(s.status);
  return `${st.charAt(0).toUpperCase()}${st.slice(1)} · ${responderWords(s.responder, companyName)}`;
}

// rawWords quotes the Company's own status and responder values when they were not ones
// Poppydesk knows ("" when there were none).
export function rawWords(s: Pick<ConversationState, "rawStatus" | "rawResponder">): string {
  return s.rawStatus || s.rawResponder ? ` (the Company said “${[s.rawStatus, s.rawResponder].filter(Boolean).join(", ")}”)` : "";
}

export const APPROVAL_LINE = "The Company asked for your approval — see Approvals";
