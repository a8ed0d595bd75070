package modelapi

import (
	"fmt"
	"sort"
	"strings"
)

// The statuses of the model's tools: one word in structuredContent "status" that a model can
// branch on, each with one meaning across every tool. They are listed here and nowhere else; each
// tool's outputSchema enumerates the ones it can return, and [Instructions] and the README list
// them with [StatusMeanings].
const (
	// StatusOK: Poppydesk did what the tool asks and nothing at a Company changed because of it
	// (a read, a listing, a page opened, a conversation message sent).
	StatusOK = "ok"
	// StatusPerformed: the Company performed the operation (the user approved it, or the Company
	// needed no approval); its response is in the untrusted Company content.
	StatusPerformed = "performed"
	// StatusWaitingForUser: NOT performed; the user decides in the Poppydesk window. Call
	// wait_for_approval with the approval handle; do not send the request again.
	StatusWaitingForUser = "waiting_for_user"
	// StatusInProgress: the user approved it and the Company is performing it (or Poppydesk is
	// sending it); call wait_for_approval.
	StatusInProgress = "in_progress"
	// StatusOutcomeUnknown: the user approved it and Poppydesk sent it, but does not know yet
	// whether the Company performed it; Poppydesk sends the same approval again, never a new one.
	StatusOutcomeUnknown = "outcome_unknown"
	// StatusDeclined: NOT performed; the user declined it in Poppydesk.
	StatusDeclined = "declined"
	// StatusExpired: NOT performed; the Company's terms expired before the user decided.
	StatusExpired = "expired"
	// StatusSuperseded: the Company replaced these terms with newer ones, which need their own
	// decision by the user (get_approval shows them).
	StatusSuperseded = "superseded"
	// StatusFailed: NOT performed; the Company refused or could not do it, or its tool returned
	// an error (its words are in the untrusted Company content).
	StatusFailed = "failed"
	// StatusWaitingForSignIn is the status of a call that was not performed because the Company
	// needs the user's account or more scopes: Poppydesk recorded a sign-in request for the window
	// (spec 4.7, 7) and the model waits for the user.
	StatusWaitingForSignIn = "waiting_for_sign_in"
	// StatusSignInNeeded: NOT performed; the Company needs the user's account (scopes named) and
	// Poppydesk did not ask the user itself: call request_sign_in.
	StatusSignInNeeded = "sign_in_needed"
	// StatusSignInNotOffered: the Company offers no sign-in to Personal Agents (spec 4).
	StatusSignInNotOffered = "sign_in_not_offered"
	// StatusNotSignedIn: the account named is not signed in at the Company.
	StatusNotSignedIn = "not_signed_in"
	// StatusAskedUser: request_sign_in recorded the request; the user signs in in the window.
	StatusAskedUser = "asked_user"
	// StatusMissingScope: the Company's website refused for want of a scope (browser tools).
	StatusMissingScope = "missing_scope"
	// StatusRefused: Poppydesk refused the request before sending anything (bad or forbidden
	// arguments, an approval the model tried to give); nothing was done. Fix the arguments.
	StatusRefused = "refused"
	// StatusNotFound: no such Company (not discovered yet), API, approval handle or conversation.
	StatusNotFound = "not_found"
	// StatusUnavailable: the feature does not run in this Poppydesk (no window, engine stopped).
	StatusUnavailable = "unavailable"
	// StatusDiscoveryFailed: the Company's poppy.json or sign-in metadata failed a check of spec
	// 3; Poppydesk will not act at this Company until it is fixed.
	StatusDiscoveryFailed = "discovery_failed"
	// StatusBlocked: Poppydesk's own rules forbid sending this (not HTTPS, a loopback or private
	// address, not one of the Company's Session destinations, a redirect, an ambiguous path;
	// spec 3, 5.2); nothing was sent and retrying will not help.
	StatusBlocked = "blocked"
	// StatusNetworkError: Poppydesk could not reach the Company (name lookup, connection, TLS);
	// nothing was performed. Retrying later may help.
	StatusNetworkError = "network_error"
	// StatusTimeout: Poppydesk's own time bound passed before the Company answered; whether
	// anything was performed is unknown unless the message says otherwise.
	StatusTimeout = "timeout"
	// StatusConnectionLost: the connection to the Company broke before it answered (its MCP
	// server dropped the exchange); the request may have reached the Company and been performed.
	// Check (recent_activity, or read what it would have changed) before sending it again.
	StatusConnectionLost = "connection_lost"
	// StatusCancelled: the client cancelled the request; a wait ends without changing anything.
	StatusCancelled = "cancelled"
	// StatusWindowClosed: NOT performed, and nothing was approved: the user closed the Poppydesk
	// window while the call waited for their decision ([ErrWindowClosed]). The approval is not
	// decided; after the user opens Poppydesk again, wait_for_approval with the same handle.
	StatusWindowClosed = "window_closed"
	// StatusCompanyError: the Company answered with an error (its words are in the untrusted
	// Company content); nothing was performed.
	StatusCompanyError = "company_error"
	// StatusRateLimited: the Company is limiting requests; retry after the time given.
	StatusRateLimited = "rate_limited"
	// StatusSessionRefused: the Company refused Poppydesk's Session (spec 5.3); tell the user.
	StatusSessionRefused = "session_refused"
	// StatusSessionEnded: the Company ended the Session again right after a new one (spec 5.5).
	StatusSessionEnded = "session_ended"
	// StatusExtensionRequired: the Company requires an extension Poppydesk does not use here.
	StatusExtensionRequired = "extension_required"
	// StatusError: something unexpected failed in Poppydesk; the message says what. Tell the
	// user if it persists.
	StatusError = "error"

	// The conversation tools' own refusals (spec 8.13).

	// StatusConversationClosed: the conversation is closed and takes no more messages.
	StatusConversationClosed = "conversation_closed"
	// StatusDirectConversationOpen: a Direct Conversation with the user is open; the parent
	// takes no messages until it closes.
	StatusDirectConversationOpen = "direct_conversation_open"
	// StatusMessageIDConflict: the Company already has a different message with this ID; this
	// one was NOT sent.
	StatusMessageIDConflict = "message_id_conflict"
	// StatusNotYours: the conversation belongs to another account or to the user's own
	// conversation in the window.
	StatusNotYours = "not_yours"

	// The task coverage tools' own answers (spec 9).

	// StatusNotListed: the Company publishes no such document (excluded tasks, skill index).
	StatusNotListed = "not_listed"
	// StatusFetchFailed: Poppydesk could not fetch the Company's public document.
	StatusFetchFailed = "fetch_failed"
	// StatusInvalidDocument: the Company's document breaks spec 9's rules; it is not used.
	StatusInvalidDocument = "invalid_document"
	// StatusInvalidReport: the report is too long or empty (spec 9.3); NOT sent.
	StatusInvalidReport = "invalid_report"
	// StatusTaskExcluded: the Company lists the task as one it chose not to offer; NOT sent.
	StatusTaskExcluded = "task_excluded"
	// StatusAlreadyReported: this task was already reported to this Company; NOT sent again.
	StatusAlreadyReported = "already_reported"
	// StatusReportsOff: the user turned reports of unsupported tasks off; NOT sent.
	StatusReportsOff = "reports_off"
	// StatusSkillNotFound: no usable skill or file of that name.
	StatusSkillNotFound = "skill_not_found"
	// StatusDigestMismatch: the skill's content does not match its digest; not used.
	StatusDigestMismatch = "digest_mismatch"
	// StatusArchiveRefused: the skill's archive failed a safety check; nothing of it was read.
	StatusArchiveRefused = "archive_refused"
)

// StatusMeanings are the statuses in plain words, as the tool descriptions, [Instructions] and
// the README give them.
var StatusMeanings = map[string]string{
	StatusOK:                "done as asked; nothing at a Company changed because of it",
	StatusPerformed:         "the Company performed it; its response is in the untrusted Company content",
	StatusWaitingForUser:    "NOT performed; waiting for the user's decision in Poppydesk: call wait_for_approval with the approval handle, do not send the request again",
	StatusInProgress:        "approved by the user; the Company is performing it: call wait_for_approval",
	StatusOutcomeUnknown:    "approved and sent, but Poppydesk does not know yet whether the Company performed it; Poppydesk resends the same approval: call wait_for_approval later, never send a new request for the same thing",
	StatusDeclined:          "NOT performed; the user declined it",
	StatusExpired:           "NOT performed; the Company's terms expired before the user decided: ask the user whether to try again",
	StatusSuperseded:        "the Company replaced these terms with newer ones, which need the user's own decision",
	StatusFailed:            "NOT performed; the Company refused or could not do it (its words are in the untrusted Company content)",
	StatusWaitingForSignIn:  "NOT performed; Poppydesk asked the user to sign in: ask the user to tell you when they have, then send the request again",
	StatusSignInNeeded:      "NOT performed; the Company needs the user's account: call request_sign_in with the scopes named",
	StatusSignInNotOffered:  "the Company offers no sign-in to Personal Agents; use what works signed out",
	StatusNotSignedIn:       "the account named is not signed in at this Company",
	StatusAskedUser:         "the user has been asked in Poppydesk to sign in; nothing is signed in until they do",
	StatusMissingScope:      "the Company's website refused for want of a scope: request_sign_in with it if the task needs it",
	StatusRefused:           "Poppydesk refused the request before sending anything; nothing was done: fix the arguments",
	StatusNotFound:          "no such Company (discover it first), API, approval handle or conversation",
	StatusUnavailable:       "this feature does not run in this Poppydesk; nothing was done",
	StatusDiscoveryFailed:   "the Company failed Poppydesk's verification; Poppydesk will not act there until it is fixed",
	StatusBlocked:           "Poppydesk's own safety rules forbid sending this; nothing was sent and retrying will not help",
	StatusNetworkError:      "Poppydesk could not reach the Company (name lookup, connection or TLS); nothing was performed: retry later",
	StatusTimeout:           "Poppydesk's time bound passed before the Company answered",
	StatusCancelled:         "the request was cancelled; nothing changed",
	StatusConnectionLost:    "the connection to the Company broke before it answered; the request may have been performed: check before sending it again",
	StatusWindowClosed:      "NOT performed, and nothing was approved: the user closed the Poppydesk window while this waited. Tell the user; once they open Poppydesk again, call wait_for_approval with the same handle (do not send the request again)",
	StatusCompanyError:      "the Company answered with an error; nothing was performed",
	StatusRateLimited:       "the Company is limiting requests; retry after the time given",
	StatusSessionRefused:    "the Company refused Poppydesk's Session; tell the user",
	StatusSessionEnded:      "the Company ended the Session again; try again later",
	StatusExtensionRequired: "the Company requires an extension Poppydesk does not use here",
	StatusError:             "something unexpected failed in Poppydesk; tell the user if it persists",

	StatusConversationClosed:     "the conversation is closed: start a new one",
	StatusDirectConversationOpen: "a Direct Conversation with the user is open; this one takes no messages until it closes",
	StatusMessageIDConflict:      "the Company already has a different message with this ID; this one was NOT sent: send it again",
	StatusNotYours:               "this conversation is not one the model may use (another account's, or the user's own)",

	StatusNotListed:       "the Company publishes no such document; nothing was done",
	StatusFetchFailed:     "Poppydesk could not fetch the Company's document; try again later",
	StatusInvalidDocument: "the Company's document breaks the protocol's rules, so Poppydesk does not use it",
	StatusInvalidReport:   "NOT sent: a report needs a task of at most 200 characters and a description of at most 2,000",
	StatusTaskExcluded:    "NOT sent: the Company lists this task as one it chose not to offer; tell the user and offer the alternative",
	StatusAlreadyReported: "NOT sent again: this task was already reported to this Company",
	StatusReportsOff:      "NOT sent: the user turned reports off; do not try again",
	StatusSkillNotFound:   "the Company's skill index has no usable skill or file of that name",
	StatusDigestMismatch:  "not used: the skill's content does not match its digest",
	StatusArchiveRefused:  "not used: the skill's archive failed a safety check",
}

// commonStatuses can answer any tool that reaches the engine or a Company: refusals of the
// arguments and the errors of [errorReply].
var commonStatuses = []string{StatusRefused, StatusNotFound, StatusUnavailable, StatusDiscoveryFailed, StatusBlocked,
	StatusNetworkError, StatusTimeout, StatusConnectionLost, StatusCancelled, StatusCompanyError, StatusRateLimited, StatusSessionRefused,
	StatusSessionEnded, StatusExtensionRequired, StatusSignInNeeded, StatusError}

// outcomeStatuses are the answers about an operation: a call's and an approval's.
var outcomeStatuses = []string{StatusPerformed, StatusWaitingForUser, StatusInProgress, StatusOutcomeUnknown,
	StatusDeclined, StatusExpired, StatusFailed}

// outcomeStatus maps the approval queue's Outcome.Status (agentcore/approvals) to the model's
// status: the queue's "done" is the Company having performed it.
func outcomeStatus(queue string) string {
	switch queue {
	case "done":
		return StatusPerformed
	case StatusWaitingForUser, StatusInProgress, StatusOutcomeUnknown, StatusDeclined, StatusExpired, StatusFailed, StatusCompanyError:
		return queue
	}
	return StatusError
}

// stateStatus maps an approval's state (agentcore/operations State) to the model's status.
func stateStatus(state string) string {
	switch state {
	case "pending":
		return StatusWaitingForUser
	case "approved", "sending", "retrying":
		return StatusInProgress
	case "outcome_unknown":
		return StatusOutcomeUnknown
	case "succeeded":
		return StatusPerformed
	case "failed":
		return StatusFailed
	case "declined":
		return StatusDeclined
	case "expired":
		return StatusExpired
	case "superseded":
		return StatusSuperseded
	}
	return StatusError
}

// statusList is "status: meaning" lines for the given statuses, for a tool's description.
func statusList(statuses ...string) string {
	var b strings.Builder
	for _, s := range statuses {
		fmt.Fprintf(&b, "\n- %s: %s", s, StatusMeanings[s])
	}
	return b.String()
}

// AllStatuses lists every status word, sorted.
func AllStatuses() []string {
	out := make([]string, 0, len(StatusMeanings))
	for s := range StatusMeanings {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
