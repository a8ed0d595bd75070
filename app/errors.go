package app

// Error is the one style of the errors that double as people's words: the window and the model
// show them as they are. It says what failed, in a sentence that may begin with a capital
// (Message), the error underneath (Err: errors.Is and errors.As reach it; nil when there is
// none) and what to do when Message does not say it (Hint). Its text is Message, then ": " and
// Err, then ". " and Hint. A condition with a fixed wording the window and the model both
// name has a [Problem] instead.
type Error struct {
	Message string
	Err     error
	Hint    string
}

func (e *Error) Error() string {
	s := e.Message
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		s += ". " + e.Hint
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
