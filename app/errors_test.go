package app

import (
	"errors"
	"io/fs"
	"testing"
)

// TestErrorWords: an Error reads as its message, then the cause, then what to do, and errors.Is
// and errors.As reach the cause; a Problem is the same error as another of its Kind.
func TestErrorWords(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *Error
		want string
	}{
		{"message alone", &Error{Message: "Reset demo exists only in demo mode"}, "Reset demo exists only in demo mode"},
		{"with its cause", &Error{Message: "Poppydesk does not know this Company", Err: fs.ErrNotExist},
			"Poppydesk does not know this Company: file does not exist"},
		{"with what to do", &Error{Message: "Poppydesk could not reach the operator at https://op.example", Err: errors.New("connection refused"),
			Hint: "Check the URL"}, "Poppydesk could not reach the operator at https://op.example: connection refused. Check the URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if tc.err.Err != nil && !errors.Is(tc.err, tc.err.Err) {
				t.Error("errors.Is does not reach the cause")
			}
		})
	}
	var h *Host
	if err := h.Refusal(); !errors.Is(err, &Problem{Kind: ProblemNotConnected}) || errors.Is(err, &Problem{Kind: ProblemWasReset}) ||
		err.Error() != problemText[ProblemNotConnected] {
		t.Errorf("a nil Host's refusal = %v", err)
	}
}
