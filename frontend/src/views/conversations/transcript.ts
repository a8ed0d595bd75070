// A conversation's transcript as rows: each entry becomes its rows (a message, a note, the line
// that sends the user to Approvals), and messages being written (text-delta, spec 8.6) are shown
// until the full message arrives and replaces them.

import type { ConversationAuthor, ConversationEntry } from "../../api";
import { APPROVAL_LINE, authorLabel, rawWords, stateLine } from "./words";

export interface Row {
  key: string;
  kind: "message" | "writing" | "note" | "approval";
  author?: ConversationAuthor;
  label: string;
  text: string;
  data?: string;
  picture?: string;
  initial?: string;
}

function initialOf(name: string): string {
  const ch = Array.from(name.trim())[0];
  return ch ? ch.toUpperCase() : "?";
}

// rowsOfEntry turns one entry into its transcript rows.
export function rowsOfEntry(e: ConversationEntry, companyName: string): Row[] {
  const co = companyName || "the Company";
  switch (e.type) {
    case "message": {
      const label = authorLabel(e.author, companyName);
      const a = e.author ?? { kind: "company-agent", name: "", picture: "" };
      const row: Row = { key: e.eventId, kind: "message", author: a, label, text: e.text, data: e.data || undefined };
      if (a.kind === "company-person") {
        row.picture = a.picture || undefined;
        row.initial = initialOf(a.name || co);
      }
      const out = [row];
      if (e.operation) out.push({ key: `${e.eventId}#op`, kind: "approval", label: "", text: APPROVAL_LINE });
      return out;
    }
    case "state":
      return [{ key: e.eventId, kind: "note", label: "", text: `${stateLine(e, companyName)}${rawWords(e)}` }];
    case "authorization":
      return [{ key: e.eventId, kind: "note", label: "", text: `${co} needs you to sign in${e.scope ? ` (${e.scope})` : ""} to continue — see Sign-in` }];
    case "user_requested":
      return [{ key: e.eventId, kind: "note", label: "", text: `${co} asks to talk with you directly${e.reason ? `: ${e.reason}` : ""}` }];
    case "direct_opened":
      return [{ key: e.eventId, kind: "note", label: "", text: "You opened a Direct Conversation with the Company" }];
    case "direct_closed":
      return [{ key: e.eventId, kind: "note", label: "", text: "The Direct Conversation was closed" }];
    default:
      return [];
  }
}

// Transcript holds a conversation's entries and the messages being written. Pieces of a message
// (text-delta) are shown until the full message arrives and replaces them (spec 8.6).
export class Transcript {
  entries: ConversationEntry[] = [];
  writing = new Map<string, string>();
  private done = new Set<string>();
  private base: Row[] = [];
  constructor(public companyName: string) {}

  add(entries: ConversationEntry[]): void {
    for (const e of entries) {
      this.entries.push(e);
      if (e.messageId) {
        this.done.add(e.messageId);
        this.writing.delete(e.messageId);
      }
      for (const r of rowsOfEntry(e, this.companyName)) this.base.push(r);
    }
  }
  // delta records the text so far of a message being written; a message already received in
  // full is not written again.
  delta(messageId: string, text: string): boolean {
    if (!messageId || this.done.has(messageId)) return false;
    this.writing.set(messageId, text);
    return true;
  }
  dropDeltas(): void {
    this.writing.clear();
  }
  rows(): Row[] {
    if (this.writing.size === 0) return this.base;
    const out = this.base.slice();
    const co = this.companyName || "The Company";
    for (const [id, text] of this.writing) {
      out.push({ key: `writing:${id}`, kind: "writing", label: `${co} is writing…`, text });
    }
    return out;
  }
}
