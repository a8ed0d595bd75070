package operations

import (
	"errors"
	"fmt"
	"time"
)

// State is the state of one revision of an operation in the engine (Operations 5–7; DESIGN
// invariants 2 and 3). The engine stores it (for example in the vault's approval record, with each
// transition in the decision log) before it acts on it.
type State string

const (
	// StatePending: received, waiting for the User's decision.
	StatePending State = "pending"
	// StateApproved: the User approved this revision; the approval is persisted, not yet sent.
	StateApproved State = "approved"
	// StateSending: the first request with the approval is being sent.
	StateSending State = "sending"
	// StateRetrying: the request with the same approval is sent again after an unknown outcome.
	StateRetrying State = "retrying"
	// StateOutcomeUnknown: a send failed or timed out; the action may or may not have been
	// performed. No new approval is asked for the same action until it is known (Operations 7).
	StateOutcomeUnknown State = "outcome_unknown"
	// StateSucceeded: the Company performed the action (final).
	StateSucceeded State = "succeeded"
	// StateFailed: the Company answered that the action was not performed (final).
	StateFailed State = "failed"
	// StateDeclined: the User declined, or withdrew the approval before it was sent (final).
	StateDeclined State = "declined"
	// StateExpired: expires_at passed before the approval was sent (final).
	StateExpired State = "expired"
	// StateSuperseded: a newer revision replaced this one before it was performed; approving this
	// revision is no longer possible (final for this revision; the new revision needs a new
	// decision).
	StateSuperseded State = "superseded"
)

// Final reports whether no event can change the state.
func (s State) Final() bool {
	switch s {
	case StateSucceeded, StateFailed, StateDeclined, StateExpired, StateSuperseded:
		return true
	}
	return false
}

// Event is something that happens to a revision.
type Event string

const (
	// EventApprove: the User approved this revision in the window (checked with CanApprove).
	EventApprove Event = "approve"
	// EventDecline: the User declined this revision.
	EventDecline Event = "decline"
	// EventWithdraw: the User withdrew an approval that was not sent yet (Operations 5).
	EventWithdraw Event = "withdraw"
	// EventSend: the engine is about to send (or send again) the request with the approval. It is
	// persisted before the request leaves.
	EventSend Event = "send"
	// EventSucceeded: the Company answered as it would have without operations.
	EventSucceeded Event = "succeeded"
	// EventFailed: the Company answered with a definitive failure (the action was not performed).
	EventFailed Event = "failed"
	// EventNoAnswer: the send failed or timed out, or the Company said it is still performing the
	// action or doesn't know (HTTP 503 with Retry-After): the outcome is unknown (Operations 7).
	EventNoAnswer Event = "no_answer"
	// EventNewRevision: the Company returned a newer revision of this operation (in a response or
	// a conversation message).
	EventNewRevision Event = "new_revision"
	// EventExpire: expires_at passed.
	EventExpire Event = "expire"
	// EventReconciledPerformed / EventReconciledNotPerformed: the engine found out another way
	// (for example from the order in the Company's API) whether an action with an unknown outcome
	// was performed (Operations 7).
	EventReconciledPerformed    Event = "reconciled_performed"
	EventReconciledNotPerformed Event = "reconciled_not_performed"
)

// ErrIllegalTransition matches every refused transition.
var ErrIllegalTransition = errors.New("illegal operation state transition")

// TransitionError says why an event is not allowed in a state.
type TransitionError struct {
	From   State
	Event  Event
	Reason string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("operation revision in state %q cannot take event %q: %s", e.From, e.Event, e.Reason)
}

// Is makes errors.Is(err, ErrIllegalTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrIllegalTransition }

// Next is the at-most-once state machine of one revision (Operations 5–7; DESIGN invariants 2, 3):
//
//	pending         --approve-->      approved   (a decision for exactly this revision)
//	pending         --decline-->      declined
//	pending|approved --new_revision--> superseded (the new revision needs a new decision)
//	pending|approved --expire-->      expired    (an expired revision is never sent)
//	approved        --withdraw|decline--> declined (a withdrawn approval is not sent)
//	approved        --send-->         sending    (persisted before the request leaves)
//	sending         --succeeded-->    succeeded
//	sending         --failed-->       failed
//	sending         --new_revision--> superseded (check 3 failed: nothing performed; Operations 6)
//	sending|retrying --no_answer-->   outcome_unknown
//	outcome_unknown --send-->         retrying   (the same approval again; Operations 7)
//	retrying        --succeeded|failed--> succeeded|failed
//	retrying|outcome_unknown --new_revision--> outcome_unknown (a new operation in answer to a
//	                                  retry doesn't say whether the first was performed)
//	outcome_unknown --reconciled_performed--> succeeded
//	outcome_unknown --reconciled_not_performed--> failed
//
// Everything else is refused with a TransitionError: approving twice, approving a superseded,
// expired, declined or finished revision, sending without an approval, asking the User again while
// the outcome is unknown, treating a new revision received in answer to an approval as approved.
// Whether an approved or retried revision may still be sent at a given time is CanSend's question.
func Next(s State, e Event) (State, error) {
	refuse := func(reason string) (State, error) {
		return s, &TransitionError{From: s, Event: e, Reason: reason}
	}
	switch s {
	case StatePending:
		switch e {
		case EventApprove:
			return StateApproved, nil
		case EventDecline:
			return StateDeclined, nil
		case EventNewRevision:
			return StateSuperseded, nil
		case EventExpire:
			return StateExpired, nil
		case EventWithdraw:
			return refuse("there is no approval to withdraw")
		case EventSend:
			return refuse("the User has not approved this revision")
		}
	case StateApproved:
		switch e {
		case EventSend:
			return StateSending, nil
		case EventWithdraw, EventDecline:
			return StateDeclined, nil
		case EventNewRevision:
			return StateSuperseded, nil
		case EventExpire:
			return StateExpired, nil
		case EventApprove:
			return refuse("this revision is already approved")
		}
	case StateSending, StateRetrying:
		switch e {
		case EventSucceeded:
			return StateSucceeded, nil
		case EventFailed:
			return StateFailed, nil
		case EventNoAnswer:
			return StateOutcomeUnknown, nil
		case EventNewRevision:
			if s == StateSending {
				return StateSuperseded, nil
			}
			return StateOutcomeUnknown, nil
		case EventApprove:
			return refuse("the approval is being sent; a new revision in answer needs its own decision")
		case EventWithdraw, EventDecline:
			return refuse("the approval has already been sent; it can no longer be withdrawn")
		case EventExpire:
			return refuse("the approval was sent before it expired; wait for the outcome")
		}
	case StateOutcomeUnknown:
		switch e {
		case EventSend:
			return StateRetrying, nil
		case EventNewRevision:
			return StateOutcomeUnknown, nil
		case EventReconciledPerformed:
			return StateSucceeded, nil
		case EventReconciledNotPerformed:
			return StateFailed, nil
		case EventApprove:
			return refuse("the outcome of the approval already sent is unknown; the User can't be asked again for this action until it is known (Operations 7)")
		case EventWithdraw, EventDecline:
			return refuse("the approval has already been sent; it can no longer be withdrawn")
		case EventExpire:
			return refuse("the outcome is unknown; expiry does not settle it, find out whether the action was performed")
		}
	default:
		if s.Final() {
			return refuse("the revision is " + string(s) + ", which is final")
		}
		return refuse("unknown state")
	}
	return refuse("not a transition of this state machine")
}

// Pending is what the engine knows about an operation when the User decides: its latest revision
// with that revision's state, and the states of the earlier revisions of the same operation (and
// of any other operation for the same action).
type Pending struct {
	Latest *Operation
	State  State
	// Earlier holds the states of earlier revisions and other operations for the same action.
	Earlier []State
}

// Decision is the User's gesture in the window, naming what the window showed.
type Decision struct {
	OperationID string
	Revision    string
	// Digest is Digest() of the revision the window showed.
	Digest string
}

// Errors of CanApprove, CanSend and CanAsk; match with errors.Is.
var (
	ErrWrongOperation   = errors.New("the decision is for another operation")
	ErrNotLatest        = errors.New("the decision is for a revision that is not the latest")
	ErrDigestMismatch   = errors.New("the decision is for terms other than the pending revision's")
	ErrRevisionExpired  = errors.New("the revision has expired")
	ErrNotPending       = errors.New("the revision is not waiting for a decision")
	ErrOutcomeUnknown   = errors.New("an approval for the same action has an unknown outcome")
	ErrAlreadyPerformed = errors.New("the action has already been performed")
)

// CanApprove reports whether the User's decision may be recorded as an approval at now
// (Operations 5; DESIGN invariant 2): the decision names exactly the latest revision, the digest
// of what the window showed equals the latest revision's digest, the revision has not expired,
// it is pending (not approved, declined, withdrawn, superseded or finished), and no approval for
// the same action is in flight or has an unknown outcome (Operations 7). A nil error means the
// caller may apply EventApprove.
func CanApprove(now time.Time, p Pending, d Decision) error {
	if p.Latest == nil {
		return fmt.Errorf("approve: %w: no operation is pending", ErrNotPending)
	}
	op := p.Latest
	if d.OperationID != op.OperationID {
		return fmt.Errorf("approve operation %s: %w (pending is %s); nothing was approved", quoteShort(d.OperationID), ErrWrongOperation, quoteShort(op.OperationID))
	}
	if d.Revision != op.Revision {
		return fmt.Errorf("approve revision %s of %s: %w (the latest is %s); show the User the latest revision and ask again", quoteShort(d.Revision), op.OperationID, ErrNotLatest, quoteShort(op.Revision))
	}
	if d.Digest != Digest(op) {
		return fmt.Errorf("approve revision %s of %s: %w; show the User the pending revision and ask again", op.Revision, op.OperationID, ErrDigestMismatch)
	}
	if op.Expired(now) {
		return fmt.Errorf("approve revision %s of %s: %w at %s; the Company must send a new revision", op.Revision, op.OperationID, ErrRevisionExpired, op.ExpiresAt.Format(time.RFC3339))
	}
	if err := CanAsk(p.Earlier); err != nil {
		return fmt.Errorf("approve revision %s of %s: %w", op.Revision, op.OperationID, err)
	}
	if p.State != StatePending {
		return fmt.Errorf("approve revision %s of %s: %w (it is %s)", op.Revision, op.OperationID, ErrNotPending, p.State)
	}
	return nil
}

// CanAsk reports whether the User may be asked to approve an operation for an action, given the
// states of the other revisions and operations for the same action (Operations 7): not while an
// approval is approved but unsent, being sent, or has an unknown outcome, and not after the action
// was performed.
func CanAsk(others []State) error {
	for _, s := range others {
		switch s {
		case StateApproved, StateSending, StateRetrying, StateOutcomeUnknown:
			return fmt.Errorf("%w (a revision is %s); find out whether it was performed before asking the User again", ErrOutcomeUnknown, s)
		case StateSucceeded:
			return fmt.Errorf("%w; do not ask the User again", ErrAlreadyPerformed)
		}
	}
	return nil
}

// CanSend reports whether the request with the approval of op may be sent at now from state s
// (DESIGN invariants 2 and 3): an approved revision only before it expires (an expired revision is
// never sent); a retry after an unknown outcome only with the same approval, and only until
// expires_at, after which the Company may have forgotten the operation (Operations 7) and the
// engine must find out another way. Sending is then EventSend.
func CanSend(now time.Time, s State, op *Operation) error {
	switch s {
	case StateApproved, StateOutcomeUnknown:
	default:
		return fmt.Errorf("send the approval of %s revision %s: %w: it is %s", op.OperationID, op.Revision, ErrIllegalTransition, s)
	}
	if op.Expired(now) {
		return fmt.Errorf("send the approval of %s revision %s: %w at %s; it is not sent", op.OperationID, op.Revision, ErrRevisionExpired, op.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// Origin is where an operation was returned, or where an approval is being given: the Company,
// the User ID (pairwise per Company, so it also names the Personal Agent and User), the Session
// and the account it is signed in to ("" when signed out).
type Origin struct {
	Company string
	UserID  string
	SID     string
	Account string
}

// ErrWrongSession matches CanApproveIn's refusals.
var ErrWrongSession = errors.New("this Session cannot approve the operation")

// CanApproveIn applies "Who can approve it" (Operations 3): an operation returned in a signed-out
// Session can be approved only in that Session; one returned in a signed-in Session can be
// approved in any Session of the same Personal Agent and User signed in to the same account. A
// signed-out Session would get a challenge for the account: sign in first.
func CanApproveIn(returnedIn, current Origin) error {
	if returnedIn.Company != current.Company || returnedIn.UserID != current.UserID {
		return fmt.Errorf("%w: it was returned to another Company or User (Operations 3)", ErrWrongSession)
	}
	if returnedIn.Account == "" {
		if current.SID != returnedIn.SID {
			return fmt.Errorf("%w: it was returned in a signed-out Session and can be approved only in that Session (Operations 3)", ErrWrongSession)
		}
		return nil
	}
	if current.Account == "" {
		return fmt.Errorf("%w: it belongs to an account; sign in to that account first (Operations 3)", ErrWrongSession)
	}
	if current.Account != returnedIn.Account {
		return fmt.Errorf("%w: it belongs to another account than the one this Session is signed in to (Operations 3)", ErrWrongSession)
	}
	return nil
}
