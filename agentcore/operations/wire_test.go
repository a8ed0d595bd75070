package operations

import (
	"errors"
	"testing"
)

var allAnswers = []Answer{AnswerPerformed, AnswerRefused, AnswerTurnedAway, AnswerNewRevision, AnswerMalformed, AnswerInProgress, AnswerNone}

// eventOfLog is the revision's event (Next) a decision-log entry records.
var eventOfLog = map[string]Event{LogSend: EventSend, LogResend: EventSend, LogExpire: EventExpire, LogNoAnswer: EventNoAnswer,
	LogInProgress: EventNoAnswer, LogSucceeded: EventSucceeded, LogFailed: EventFailed, LogNewRevision: EventNewRevision}

// TestBeforeSend checks every (state, expired, sendable) against the table of BeforeSend, and
// that each step it persists is a transition of the revision's machine (Next), except
// not_sendable: an approval the Session can't carry fails before it leaves.
func TestBeforeSend(t *testing.T) {
	type in struct {
		s                 State
		expired, sendable bool
	}
	want := map[in]Step{}
	for _, e := range []bool{false, true} {
		for _, ok := range []bool{false, true} {
			want[in{StateSending, e, ok}] = Step{StateOutcomeUnknown, LogNoAnswer, ThenSend}
			want[in{StateRetrying, e, ok}] = Step{StateOutcomeUnknown, LogNoAnswer, ThenSend}
			want[in{StateApproved, true, ok}] = Step{StateExpired, LogExpire, ThenStop}
			want[in{StateOutcomeUnknown, true, ok}] = Step{StateOutcomeUnknown, "", ThenStop}
		}
	}
	want[in{StateApproved, false, false}] = Step{StateFailed, LogNotSendable, ThenStop}
	want[in{StateOutcomeUnknown, false, false}] = Step{StateOutcomeUnknown, "", ThenStop}
	want[in{StateApproved, false, true}] = Step{StateSending, LogSend, ThenSend}
	want[in{StateOutcomeUnknown, false, true}] = Step{StateRetrying, LogResend, ThenSend}
	for _, s := range allStates {
		for _, expired := range []bool{false, true} {
			for _, sendable := range []bool{false, true} {
				got, err := BeforeSend(s, expired, sendable)
				w, ok := want[in{s, expired, sendable}]
				if !ok {
					if !errors.Is(err, ErrIllegalTransition) || got.Then != ThenStop || got.To != s {
						t.Errorf("BeforeSend(%s, %v, %v) = %+v, %v; want refused", s, expired, sendable, got, err)
					}
					continue
				}
				if err != nil || got != w {
					t.Errorf("BeforeSend(%s, %v, %v) = %+v, %v; want %+v", s, expired, sendable, got, err, w)
				}
				agreesWithNext(t, s, got)
			}
		}
	}
}

// TestAfterSend checks every (state, answer) against the table of AfterSend, and that each step
// it persists is a transition of the revision's machine (Next), except a new revision in answer
// to the first send: the item then waits for the User's decision about that revision (pending),
// while the approved one is superseded.
func TestAfterSend(t *testing.T) {
	want := map[State]map[Answer]Step{
		StateSending: {
			AnswerPerformed: {StateSucceeded, LogSucceeded, ThenStop}, AnswerRefused: {StateFailed, LogFailed, ThenStop},
			AnswerTurnedAway: {StateFailed, LogFailed, ThenStop}, AnswerNewRevision: {StatePending, LogNewRevision, ThenAsk},
			AnswerMalformed: {StateOutcomeUnknown, LogNoAnswer, ThenStop}, AnswerInProgress: {StateOutcomeUnknown, LogInProgress, ThenPoll},
			AnswerNone: {StateOutcomeUnknown, LogNoAnswer, ThenRetry},
		},
		StateRetrying: {
			AnswerPerformed: {StateSucceeded, LogSucceeded, ThenStop}, AnswerRefused: {StateFailed, LogFailed, ThenStop},
			AnswerTurnedAway: {StateOutcomeUnknown, LogNoAnswer, ThenRetry}, AnswerNewRevision: {StateOutcomeUnknown, LogNewRevision, ThenStop},
			AnswerMalformed: {StateOutcomeUnknown, LogNoAnswer, ThenStop}, AnswerInProgress: {StateOutcomeUnknown, LogInProgress, ThenPoll},
			AnswerNone: {StateOutcomeUnknown, LogNoAnswer, ThenRetry},
		},
	}
	for _, s := range allStates {
		for _, a := range allAnswers {
			got, err := AfterSend(s, a)
			w, ok := want[s][a]
			if !ok {
				if !errors.Is(err, ErrIllegalTransition) || got.Then != ThenStop {
					t.Errorf("AfterSend(%s, %s) = %+v, %v; want refused", s, a, got, err)
				}
				continue
			}
			if err != nil || got != w {
				t.Errorf("AfterSend(%s, %s) = %+v, %v; want %+v", s, a, got, err, w)
			}
			if s == StateSending && a == AnswerNewRevision {
				if next, err := Next(s, EventNewRevision); err != nil || next != StateSuperseded {
					t.Errorf("the approved revision after a new one: %s, %v", next, err)
				}
				continue
			}
			agreesWithNext(t, s, got)
		}
	}
	if _, err := AfterSend(StateSending, Answer("bogus")); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("an unknown answer: %v", err)
	}
}

func agreesWithNext(t *testing.T, from State, st Step) {
	t.Helper()
	if st.Log == "" || st.Log == LogNotSendable {
		return
	}
	next, err := Next(from, eventOfLog[st.Log])
	if err != nil || next != st.To {
		t.Errorf("%s --%s--> %s is not a transition of Next (%s, %v)", from, st.Log, st.To, next, err)
	}
}
