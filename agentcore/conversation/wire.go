package conversation

import (
	"encoding/json"
	"time"
)

// Statuses (spec 8.7). A status Poppydesk doesn't know is treated as StatusWorking.
const (
	StatusWorking = "working"
	StatusIdle    = "idle"
	StatusQueued  = "queued"
	StatusClosed  = "closed"
)

// Responders (spec 8.7). A responder Poppydesk doesn't know is treated as ResponderHuman.
const (
	ResponderAgent = "agent"
	ResponderHuman = "human"
)

// Author types (spec 8.8): AuthorAgent for what the model or Poppydesk writes, AuthorHuman only
// for the user's own words typed in the window.
const (
	AuthorAgent = "agent"
	AuthorHuman = "human"
)

// Event types (spec 8.5). Other types are skipped.
const (
	EventMessage       = "message"
	EventState         = "state"
	EventAuthorization = "authorization"
	EventUserRequested = "user_requested"
	EventDirectOpened  = "direct_opened"
	EventDirectClosed  = "direct_closed"
)

// NormalizeStatus maps a status to one Poppydesk knows (spec 8.7: unknown → working).
func NormalizeStatus(s string) string {
	switch s {
	case StatusWorking, StatusIdle, StatusQueued, StatusClosed:
		return s
	}
	return StatusWorking
}

// NormalizeResponder maps a responder to one Poppydesk knows (spec 8.7: unknown → human).
func NormalizeResponder(r string) string {
	if r == ResponderAgent {
		return r
	}
	return ResponderHuman
}

// Author is who wrote a message (spec 8.4). ID, Name and Image come only from the Company and
// are Company content (spec 10.1).
type Author struct {
	Type  string `json:"type"`
	ID    string `json:"id,omitempty"`
	Name  string `json:"name,omitempty"`
	Image string `json:"image,omitempty"`
}

// Message is a message of either side (spec 8.4).
type Message struct {
	ID         string          `json:"id"`
	Role       string          `json:"role,omitempty"`
	Author     Author          `json:"author"`
	Text       string          `json:"text,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Context    map[string]any  `json:"context,omitempty"`
	Extensions json.RawMessage `json:"extensions,omitempty"`
}

// wireEvent is an event as the Company sends it (spec 8.5).
type wireEvent struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	CreatedAt      string          `json:"created_at"`
	Message        json.RawMessage `json:"message"`
	Status         string          `json:"status"`
	Responder      string          `json:"responder"`
	Error          string          `json:"error"`
	Scope          string          `json:"scope"`
	Reason         string          `json:"reason"`
	ConversationID string          `json:"conversation_id"`
}

// readResponse is a read (spec 8.5) or the reply to a POST (8.3, 8.9, 8.12).
type readResponse struct {
	ConversationID string            `json:"conversation_id"`
	Events         []json.RawMessage `json:"events"`
	Cursor         *string           `json:"cursor"`
	HasMore        bool              `json:"has_more"`
	Status         string            `json:"status"`
	Responder      string            `json:"responder"`
}

// textDelta is a piece of a message being written (spec 8.6).
type textDelta struct {
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
}

// Entry is one handled event as the window and the model see it. Text, Author names, Data and
// Extensions are Company content when Role is "company" (spec 10.1).
type Entry struct {
	EventID   string    `json:"event_id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	// message events
	MessageID  string          `json:"message_id,omitempty"`
	Role       string          `json:"role,omitempty"`
	Author     *Author         `json:"author,omitempty"`
	Text       string          `json:"text,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Extensions json.RawMessage `json:"extensions,omitempty"`
	// OperationID and Revision name an operation the message carries (Operations 4).
	OperationID string `json:"operation_id,omitempty"`
	Revision    string `json:"revision,omitempty"`
	// state events (normalized; Raw* as sent)
	Status       string `json:"status,omitempty"`
	Responder    string `json:"responder,omitempty"`
	RawStatus    string `json:"raw_status,omitempty"`
	RawResponder string `json:"raw_responder,omitempty"`
	// authorization, user_requested, direct_opened / direct_closed
	Error          string `json:"error,omitempty"`
	Scope          string `json:"scope,omitempty"`
	Reason         string `json:"reason,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
}
