package operations

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var allStates = []State{StatePending, StateApproved, StateSending, StateRetrying, StateOutcomeUnknown,
	StateSucceeded, StateFailed, StateDeclined, StateExpired, StateSuperseded}

var allEvents = []Event{EventApprove, EventDecline, EventWithdraw, EventSend, EventSucceeded, EventFailed,
	EventNoAnswer, EventNewRevision, EventExpire, EventReconciledPerformed, EventReconciledNotPerformed}

// TestNextComplete checks every (state, event) pair against the full transition table: anything
// not listed must be refused.
func TestNextComplete(t *testing.T) {
	allowed := map[State]map[Event]State{
		StatePending: {EventApprove: StateApproved, EventDecline: StateDeclined, EventNewRevision: StateSuperseded, EventExpire: StateExpired},
		StateApproved: {EventSend: StateSending, EventWithdraw: StateDeclined, EventDecline: StateDeclined,
			EventNewRevision: StateSuperseded, EventExpire: StateExpired},
		StateSending:  {EventSucceeded: StateSucceeded, EventFailed: StateFailed, EventNoAnswer: StateOutcomeUnknown, EventNewRevision: StateSuperseded},
		StateRetrying: {EventSucceeded: StateSucceeded, EventFailed: StateFailed, EventNoAnswer: StateOutcomeUnknown, EventNewRevision: StateOutcomeUnknown},
		StateOutcomeUnknown: {EventSend: StateRetrying, EventNewRevision: StateOutcomeUnknown,
			EventReconciledPerformed: StateSucceeded, EventReconciledNotPerformed: StateFailed},
	}
	for _, s := range allStates {
		for _, e := range allEvents {
			got, err := Next(s, e)
			want, ok := allowed[s][e]
			if ok {
				if err != nil || got != want {
					t.Errorf("Next(%s, %s) = %s, %v; want %s", s, e, got, err, want)
				}
				continue
			}
			if err == nil || !errors.Is(err, ErrIllegalTransition) || got != s {
				t.Errorf("Next(%s, %s) = %s, %v; want refused", s, e, got, err)
			}
		}
	}
	if _, err := Next(State("bogus"), EventApprove); err == nil {
		t.Error("unknown state accepted")
	}
}

// TestNextScenarios walks the paths the spec describes.
func TestNextScenarios(t *testing.T) {
	tests := []struct {
		name   string
		events []Event
		want   State
		failAt int // index of the refused event, -1 if none
	}{
		{"approve and succeed", []Event{EventApprove, EventSend, EventSucceeded}, StateSucceeded, -1},
		{"timeout, retry with the same approval, succeed", []Event{EventApprove, EventSend, EventNoAnswer, EventSend, EventSucceeded}, StateSucceeded, -1},
		{"new revision in answer to the approval needs a new decision", []Event{EventApprove, EventSend, EventNewRevision, EventApprove}, StateSuperseded, 3},
		{"approving a superseded revision", []Event{EventNewRevision, EventApprove}, StateSuperseded, 1},
		{"asking again while outcome unknown", []Event{EventApprove, EventSend, EventNoAnswer, EventApprove}, StateOutcomeUnknown, 3},
		{"new revision in answer to a retry doesn't settle it", []Event{EventApprove, EventSend, EventNoAnswer, EventSend, EventNewRevision, EventApprove}, StateOutcomeUnknown, 5},
		{"reconciled", []Event{EventApprove, EventSend, EventNoAnswer, EventReconciledNotPerformed}, StateFailed, -1},
		{"withdrawn approval is not sent", []Event{EventApprove, EventWithdraw, EventSend}, StateDeclined, 2},
		{"expired approval is not sent", []Event{EventApprove, EventExpire, EventSend}, StateExpired, 2},
		{"sent approval can't be withdrawn", []Event{EventApprove, EventSend, EventWithdraw}, StateSending, 2},
		{"sending requires approval", []Event{EventSend}, StatePending, 0},
		{"no double approval", []Event{EventApprove, EventApprove}, StateApproved, 1},
		{"declined is final", []Event{EventDecline, EventApprove}, StateDeclined, 1},
		{"succeeded is final", []Event{EventApprove, EventSend, EventSucceeded, EventSend}, StateSucceeded, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := StatePending
			failed := -1
			for i, e := range tt.events {
				next, err := Next(s, e)
				if err != nil {
					failed = i
					break
				}
				s = next
			}
			if failed != tt.failAt || s != tt.want {
				t.Errorf("ended in %s, refused at %d; want %s, refused at %d", s, failed, tt.want, tt.failAt)
			}
		})
	}
}

func TestCanApprove(t *testing.T) {
	latest := mustParse(t, specOperation) // expires 2026-10-08T19:20:00Z
	before := time.Date(2026, 10, 8, 19, 0, 0, 0, time.UTC)
	good := Decision{OperationID: latest.OperationID, Revision: latest.Revision, Digest: Digest(latest)}
	older := *latest
	older.Revision = "1791480000-old"
	tests := []struct {
		name string
		now  time.Time
		p    Pending
		d    Decision
		want error
	}{
		{"latest pending unexpired", before, Pending{Latest: latest, State: StatePending, Earlier: []State{StateSuperseded}}, good, nil},
		{"at expires_at exactly", latest.ExpiresAt, Pending{Latest: latest, State: StatePending}, good, nil},
		{"after expiry", latest.ExpiresAt.Add(time.Nanosecond), Pending{Latest: latest, State: StatePending}, good, ErrRevisionExpired},
		{"older revision", before, Pending{Latest: latest, State: StatePending}, Decision{latest.OperationID, older.Revision, Digest(&older)}, ErrNotLatest},
		{"another operation", before, Pending{Latest: latest, State: StatePending}, Decision{"exc_other", latest.Revision, good.Digest}, ErrWrongOperation},
		{"digest of other terms", before, Pending{Latest: latest, State: StatePending}, Decision{latest.OperationID, latest.Revision, Digest(&older)}, ErrDigestMismatch},
		{"no digest", before, Pending{Latest: latest, State: StatePending}, Decision{latest.OperationID, latest.Revision, ""}, ErrDigestMismatch},
		{"declined", before, Pending{Latest: latest, State: StateDeclined}, good, ErrNotPending},
		{"already approved", before, Pending{Latest: latest, State: StateApproved}, good, ErrNotPending},
		{"superseded", before, Pending{Latest: latest, State: StateSuperseded}, good, ErrNotPending},
		{"earlier outcome unknown", before, Pending{Latest: latest, State: StatePending, Earlier: []State{StateOutcomeUnknown}}, good, ErrOutcomeUnknown},
		{"earlier being sent", before, Pending{Latest: latest, State: StatePending, Earlier: []State{StateSending}}, good, ErrOutcomeUnknown},
		{"earlier performed", before, Pending{Latest: latest, State: StatePending, Earlier: []State{StateSucceeded}}, good, ErrAlreadyPerformed},
		{"nothing pending", before, Pending{}, good, ErrNotPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CanApprove(tt.now, tt.p, tt.d)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestCanSend(t *testing.T) {
	op := mustParse(t, specOperation)
	before, after := op.ExpiresAt.Add(-time.Minute), op.ExpiresAt.Add(time.Minute)
	tests := []struct {
		s    State
		now  time.Time
		want error
	}{
		{StateApproved, before, nil},
		{StateOutcomeUnknown, before, nil},
		{StateApproved, after, ErrRevisionExpired},
		{StateOutcomeUnknown, after, ErrRevisionExpired},
		{StatePending, before, ErrIllegalTransition},
		{StateDeclined, before, ErrIllegalTransition},
		{StateSucceeded, before, ErrIllegalTransition},
		{StateSuperseded, before, ErrIllegalTransition},
		{StateSending, before, ErrIllegalTransition},
	}
	for _, tt := range tests {
		err := CanSend(tt.now, tt.s, op)
		if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("CanSend(%s) = %v, want %v", tt.s, err, tt.want)
		}
	}
}

func TestCanApproveIn(t *testing.T) {
	signedOut := Origin{Company: "https://shop.example", UserID: "u1", SID: "s1"}
	signedIn := Origin{Company: "https://shop.example", UserID: "u1", SID: "s1", Account: "acct_A"}
	tests := []struct {
		name     string
		returned Origin
		current  Origin
		ok       bool
	}{
		{"signed out, same Session", signedOut, signedOut, true},
		{"signed out, same Session now signed in", signedOut, Origin{Company: signedOut.Company, UserID: "u1", SID: "s1", Account: "acct_A"}, true},
		{"signed out, other Session", signedOut, Origin{Company: signedOut.Company, UserID: "u1", SID: "s2"}, false},
		{"signed in, other Session same account", signedIn, Origin{Company: signedIn.Company, UserID: "u1", SID: "s2", Account: "acct_A"}, true},
		{"signed in, other account", signedIn, Origin{Company: signedIn.Company, UserID: "u1", SID: "s2", Account: "acct_B"}, false},
		{"signed in, now signed out", signedIn, Origin{Company: signedIn.Company, UserID: "u1", SID: "s1"}, false},
		{"other User", signedIn, Origin{Company: signedIn.Company, UserID: "u2", SID: "s9", Account: "acct_A"}, false},
		{"other Company", signedIn, Origin{Company: "https://other.example", UserID: "u1", SID: "s1", Account: "acct_A"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CanApproveIn(tt.returned, tt.current)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && (!errors.Is(err, ErrWrongSession) || !strings.Contains(err.Error(), "Operations 3")) {
				t.Errorf("err = %v", err)
			}
		})
	}
}
