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
