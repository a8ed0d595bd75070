package operations

import "fmt"

// The way from the User's decision to the wire (Operations 6, 7; DESIGN invariant 3), as two
// pure functions a reader can check against their table tests: BeforeSend is the step before
// each send of an approval, AfterSend the step after the Company's answer to it. The approval
// queue (agentcore/approvals) persists each step — the item's state and the decision-log entry
// — before it acts on it. The item's state is its latest revision's (Next is one revision's
// machine; a new revision in answer to the first send makes the item pending again).

// Answer is what one send of an approval got, as the approval queue reads the Company's answer.
type Answer string

const (
	// AnswerPerformed: the response as without operations (2xx, a tool result), or the first
	// send's response again (Operations 7).
	AnswerPerformed Answer = "performed"
	// AnswerRefused: the API's or the tool's own refusal of the action (a 4xx, a tool error):
	// not performed.
	AnswerRefused Answer = "refused"
	// AnswerTurnedAway: refused at the Company's door before it handled the request (Session,
	// version, extension or token; spec 5.3, 3.4, 7), or not sent at all for a reason of
	// Poppydesk's own: this send performed nothing.
	AnswerTurnedAway Answer = "turned_away"
	// AnswerNewRevision: the operation again with a new revision (check 3 failed, Operations 6).
	AnswerNewRevision Answer = "new_revision"
	// AnswerMalformed: an operation that is not valid (Operations 4).
	AnswerMalformed Answer = "malformed"
	// AnswerInProgress: HTTP 503 with Retry-After, or a tool's in_progress (Operations 7).
	AnswerInProgress Answer = "in_progress"
	// AnswerNone: no usable answer: a network error, a timeout, a 5xx, a 429 after the waits.
	AnswerNone Answer = "none"
)

// Then is what the queue does after persisting a step.
type Then string

const (
	ThenSend  Then = "send"  // send the approval now
	ThenRetry Then = "retry" // send the same approval again after a backoff, within the attempts
	ThenPoll  Then = "poll"  // ask again with the same approval after the Company's wait, within the poll time
	ThenAsk   Then = "ask"   // the User decides about the Company's new revision
	ThenStop  Then = "stop"  // report the outcome: nothing more is sent now
)

// Decision-log entries of the steps. An empty Log persists nothing: the state stays.
const (
	LogSend        = "send"
	LogResend      = "resend"
	LogExpire      = "expire"
	LogNotSendable = "not_sendable"
	LogNoAnswer    = "no_answer"
	LogSucceeded   = "succeeded"
	LogFailed      = "failed"
	LogInProgress  = "in_progress"
	LogNewRevision = "new_revision"
)

// Step is one transition on the way to the wire: the state to persist with its decision-log
// entry (none when Log is empty), and what follows.
type Step struct {
	To   State
	Log  string
	Then Then
}

// BeforeSend is the step before a send of the approval of a revision in state s; expired is
// whether its expires_at has passed, sendable whether the Session it would be sent in can
// approve it (Operations 3 "Who can approve it", Operations 2):
//
//	state            expired  sendable  → state            log           then
//	sending|retrying    -        -        outcome_unknown  no_answer     send  (a send was interrupted)
//	approved           yes       -        expired          expire        stop  (never sent after expiry)
//	outcome_unknown    yes       -        outcome_unknown  -             stop  (the Company may have forgotten it)
//	approved           no        no       failed           not_sendable  stop  (nothing sent, nothing performed)
//	outcome_unknown    no        no       outcome_unknown  -             stop
//	approved           no        yes      sending          send          send  (persisted before it leaves)
//	outcome_unknown    no        yes      retrying         resend        send  (the same approval again)
//
// Any other state has no approval to send (ErrIllegalTransition).
func BeforeSend(s State, expired, sendable bool) (Step, error) {
	switch {
	case s == StateSending || s == StateRetrying:
		return Step{To: StateOutcomeUnknown, Log: LogNoAnswer, Then: ThenSend}, nil
	case s != StateApproved && s != StateOutcomeUnknown:
		return Step{To: s, Then: ThenStop}, fmt.Errorf("send the approval: %w: it is %s", ErrIllegalTransition, s)
	case expired && s == StateApproved:
		return Step{To: StateExpired, Log: LogExpire, Then: ThenStop}, nil
	case !sendable && s == StateApproved:
		return Step{To: StateFailed, Log: LogNotSendable, Then: ThenStop}, nil
	case expired || !sendable:
		return Step{To: s, Then: ThenStop}, nil
	case s == StateApproved:
		return Step{To: StateSending, Log: LogSend, Then: ThenSend}, nil
	}
	return Step{To: StateRetrying, Log: LogResend, Then: ThenSend}, nil
}

// AfterSend is the step after the Company's answer a to a send from state from (sending: the
// first send of this approval; retrying: a send after an unknown outcome):
//
//	from      answer        → state            log           then
//	any       performed       succeeded        succeeded     stop
//	any       refused         failed           failed        stop
//	sending   turned_away     failed           failed        stop   (no send of it was handled)
//	retrying  turned_away     outcome_unknown  no_answer     retry  (says nothing of the earlier send)
//	sending   new_revision    pending          new_revision  ask    (nothing performed: a new decision)
//	retrying  new_revision    outcome_unknown  new_revision  stop   (says nothing of the earlier send)
//	any       malformed       outcome_unknown  no_answer     stop
//	any       in_progress     outcome_unknown  in_progress   poll
//	any       none            outcome_unknown  no_answer     retry
func AfterSend(from State, a Answer) (Step, error) {
	if from != StateSending && from != StateRetrying {
		return Step{To: from, Then: ThenStop}, fmt.Errorf("an answer to a send: %w: the approval is %s, not being sent", ErrIllegalTransition, from)
	}
	first := from == StateSending
	switch a {
	case AnswerPerformed:
		return Step{To: StateSucceeded, Log: LogSucceeded, Then: ThenStop}, nil
	case AnswerRefused:
		return Step{To: StateFailed, Log: LogFailed, Then: ThenStop}, nil
	case AnswerTurnedAway:
		if first {
			return Step{To: StateFailed, Log: LogFailed, Then: ThenStop}, nil
		}
		return Step{To: StateOutcomeUnknown, Log: LogNoAnswer, Then: ThenRetry}, nil
	case AnswerNewRevision:
		if first {
			return Step{To: StatePending, Log: LogNewRevision, Then: ThenAsk}, nil
		}
		return Step{To: StateOutcomeUnknown, Log: LogNewRevision, Then: ThenStop}, nil
	case AnswerMalformed:
		return Step{To: StateOutcomeUnknown, Log: LogNoAnswer, Then: ThenStop}, nil
	case AnswerInProgress:
		return Step{To: StateOutcomeUnknown, Log: LogInProgress, Then: ThenPoll}, nil
	case AnswerNone:
		return Step{To: StateOutcomeUnknown, Log: LogNoAnswer, Then: ThenRetry}, nil
	}
	return Step{To: from, Then: ThenStop}, fmt.Errorf("an answer to a send: %w: unknown answer %q", ErrIllegalTransition, a)
}
