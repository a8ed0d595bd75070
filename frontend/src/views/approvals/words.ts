// The words and times the Approvals section shows: an item's state in plain words, the time left
// before a revision expires, and instants in the user's locale.

export function formatRemaining(ms: number): string {
  if (ms <= 0) return "expired";
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, "0")} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} days`;
}

// formatTime shows an RFC 3339 instant in the user's locale, or the text as given.
export function formatTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

// formatDay shows an RFC 3339 instant as a day and a time, "1 Dec at 08:47" in the user's locale
// (with the year when it is not this year), or the text as given.
export function formatDay(iso: string, now: Date = new Date()): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const opts: Intl.DateTimeFormatOptions = { day: "numeric", month: "short" };
  if (d.getFullYear() !== now.getFullYear()) opts.year = "numeric";
  return `${d.toLocaleDateString(undefined, opts)} at ${d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" })}`;
}

// recordWords is a decided or finished item as a record: what the user did and when.
// inConversation says the approval went in a conversation: the Company accepted it there, and its
// agent tells how it went in a later message.
export function recordWords(it: { state: string; decided?: string; updated: string }, now: Date = new Date(), inConversation = false): string {
  const decided = it.decided ? formatDay(it.decided, now) : "";
  const updated = formatDay(it.updated, now);
  switch (it.state) {
    case "approved":
    case "sending":
    case "retrying":
      return `Approved${decided ? ` on ${decided}` : ""} · sending`;
    case "succeeded":
      return `Approved${decided ? ` on ${decided}` : ""} · ${inConversation ? "accepted in the conversation" : "performed"}`;
    case "failed":
      return `Approved${decided ? ` on ${decided}` : ""} · refused by the Company`;
    case "outcome_unknown":
      return `Approved${decided ? ` on ${decided}` : ""} · outcome unknown`;
    case "declined":
      return `Declined${decided ? ` on ${decided}` : ` on ${updated}`}`;
    case "expired":
      return `Expired on ${updated} without a decision`;
    case "superseded":
      return `Replaced by newer terms on ${updated}`;
    case "pending":
      return "Waiting for your decision";
    default:
      return stateWords(it.state);
  }
}

const STATE_WORDS: Record<string, string> = {
  pending: "Waiting for your decision",
  approved: "Approved; sending",
  sending: "Approved; sending",
  retrying: "Approved; sending again",
  outcome_unknown: "Outcome unknown",
  succeeded: "Done",
  failed: "Not done (the Company refused)",
  declined: "Declined",
  expired: "Expired",
  superseded: "Replaced by a newer version",
};

export function stateWords(state: string): string {
  return STATE_WORDS[state] ?? state;
}

// itemStateWords is an item's state in plain words: when the Company broke the Operations
// rules for it (item.violation), that comes first, so the user never reads it as a refusal or
// as something their agent did.
export function itemStateWords(item: { state: string; violation?: string }): string {
  if (item.violation) {
    return item.state === "outcome_unknown"
      ? "Outcome unknown: the Company broke the approval rules, so nothing more is sent"
      : "Not done: the Company broke the approval rules, so this can’t be approved";
  }
  return stateWords(item.state);
}
