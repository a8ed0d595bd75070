package conversation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Error is a conversation failure with the spec's words: the Company's *transport.ProtocolError
// (spec 8.13) when it refused, and what Poppydesk did about it.
type Error struct {
	Op, Company, ConversationID string
	// Code is the spec 8.13 (or spec 7) error code, or a Poppydesk code: "ownership",
	// "sign_in_needed", "no_endpoint", "not_found".
	Code string
	// DirectConversationID is the open Direct Conversation (direct_conversation_open).
	DirectConversationID string
	Scopes               []string
	Msg                  string
	Err                  error
}

func (e *Error) Error() string {
	s := "conversation: " + e.Op
	if e.ConversationID != "" {
		s += " " + e.ConversationID
	}
	s += " at " + e.Company + ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// explain turns a Company refusal into an *Error that says what happened and what to do.
func explain(op, company, id string, err error) error {
	var pe *transport.ProtocolError
	if !errors.As(err, &pe) {
		return &Error{Op: op, Company: company, ConversationID: id, Code: "network", Msg: "the Company could not be reached or did not answer; nothing is lost, try again", Err: err}
	}
	e := &Error{Op: op, Company: company, ConversationID: id, Code: pe.Code, Err: err, Scopes: pe.Scopes}
	switch {
	case pe.NeedsScopes():
		e.Code = "sign_in_needed"
		e.Msg = fmt.Sprintf("the Company needs the user's account (scopes %q) for this conversation; the message was not accepted and is kept to send after the user signs in in Poppydesk (spec 8.11)", strings.Join(pe.Scopes, " "))
	case pe.Code == transport.CodeConversationNotFound:
		e.Msg = "the Company does not know this conversation for this Personal Agent, user and account (spec 8.2, 8.13); start a new one"
	case pe.Code == transport.CodeConversationClosed:
		e.Msg = "the conversation is closed and takes no more messages (spec 8.12, 8.13); start a new one"
	case pe.Code == transport.CodeDirectConversationOpen:
		e.DirectConversationID = pe.ConversationID
		e.Msg = fmt.Sprintf("a Direct Conversation (%s) is open, so the parent takes no messages or handoff until it closes (spec 8.10, 8.13)", pe.ConversationID)
	case pe.Code == transport.CodeMessageIDConflict:
		e.Msg = "the Company already accepted a different message with this message ID (spec 8.3, 8.13); Poppydesk never sends a silent duplicate, so this message was NOT sent. Send it again as a new message"
	case pe.Code == transport.CodeInvalidCursor:
		e.Msg = "the Company does not know the saved cursor (spec 8.13)"
	case pe.Code == transport.CodeCursorExpired:
		e.Msg = "the Company no longer has the events at the saved cursor (spec 8.5)"
	case pe.Code == transport.CodeInvalidRequest:
		e.Msg = "the Company says the request is malformed (spec 8.13); this is a Poppydesk or Company bug, report it with the inspector's exchange"
	case pe.Code == transport.CodeExtensionRequired:
		e.Msg = fmt.Sprintf("the Company requires extension %q for conversations, which this Session does not use (spec 3.3, 8.13)", pe.Extension)
	default:
		e.Msg = "the Company refused the request"
	}
	return e
}
