package modelapi

// The model's conversation tools (spec 8, 10.1): start, send, read/wait, hand off and
// close conversations with Company Agents. They are one of the tool groups of NewServer and work when
// Deps.Actions also implements [ConversationProvider]. The model writes as the agent
// (author.type "agent", spec 8.8): only the window sends the user's own words. No tool accepts
// a Company's request to talk with the user (spec 8.10) or approves an operation in a message
// (Operations 5): those are the user's decisions in the window. Everything the Company wrote
// (messages, author names, reasons) reaches the model inside the untrusted-content envelope.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// ConversationProvider gives the conversation tools the window's conversation Manager.
type ConversationProvider interface {
	Conversations() (*conversation.Manager, error)
}

// maxToolWait caps wait_seconds of the conversation tools.
const maxToolWait = 25

const convRef = `"company": {"type": "string", "description": "The Company: its identifier or domain, as discover_company returned."},
    "conversation_id": {"type": "string", "description": "The conversation's ID, from start_conversation."}`

const waitArg = `"wait_seconds": {"type": "integer", "minimum": 0, "maximum": 25, "description": "Seconds to wait for the Company's reply (default 10)."}`

// convStatuses are the conversation tools' statuses besides ok.
var convStatuses = []string{StatusOK, StatusConversationClosed, StatusDirectConversationOpen, StatusMessageIDConflict, StatusNotYours}

// convOutput is the outputSchema of the conversation tools.
func convOutput() json.RawMessage {
	return output(convStatuses, js{
		"conversation": closed(js{
			"conversation_id":          str("The conversation's ID."),
			"status":                   str("The conversation's status (spec 8.7)."),
			"responder":                str("Who answers: agent or a person (spec 8.7)."),
			"direct":                   boolean("Whether this is a Direct Conversation with the user."),
			"parent":                   str("The parent conversation of a Direct Conversation."),
			"direct_conversation_open": str("An open Direct Conversation of this one."),
			"needs_sign_in_scopes":     stringList("The scopes the Company needs the user to sign in with."),
			"company_asks_for_user":    integer("How many requests to talk with the user wait for the user's decision."),
		}, "conversation_id", "status", "responder"),
		"direct_conversation_id": str("The open Direct Conversation (direct_conversation_open)."),
		"needs_sign_in_scopes":   stringList("The scopes the Company needs the user to sign in with."),
	}, js{"events": arrayOf(open(js{"type": str(""), "event_id": str(""), "from": str(""), "author": open(js{}), "text": str(""), "data": anyJSON(""),
		"operation": open(js{}), "status": str(""), "responder": str(""), "scope": str(""), "reason": str(""), "conversation_id": str("")}), "The Company's new events.")})
}

func addConversationTools(s *mcp.Server, d Deps) {
	t := &convTools{d: d}
	statuses := "\nStatuses:" + statusList(convStatuses...)
	AddTool(s, Tool{Name: "start_conversation", Title: "Start a conversation with a Company's agent",
		Description: "Starts a conversation with the Company Agent (spec 8.3) with your first message, written as the user's agent. Returns the conversation ID, its status and the Company's first events (untrusted content). Use it for questions and requests the Company's APIs don't cover." + statuses,
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company", "text"], "properties": {
    "company": {"type": "string", "description": "The Company: its identifier or domain."},
    "text": {"type": "string", "minLength": 1, "description": "Your message, in natural language."},
    "data": {"type": "object", "description": "Structured details that would need markup in text (spec 8.4)."},
    "account": {"type": "string", "description": "The signed-in account to use (omit for signed out)."},
    ` + waitArg + `}}`, Output: convOutput(), OpenWorld: true}, t.start)
	AddTool(s, Tool{Name: "send_conversation_message", Title: "Send a message in a conversation",
		Description: "Sends a message in a conversation as the user's agent (spec 8.3) and returns the Company's new events. A message never approves anything: operations are decided by the user in Poppydesk." + statuses,
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company", "conversation_id", "text"], "properties": {
    ` + convRef + `,
    "text": {"type": "string", "minLength": 1, "description": "Your message, in natural language."},
    "data": {"type": "object", "description": "Structured details that would need markup in text (spec 8.4)."},
    ` + waitArg + `}}`, Output: convOutput(), OpenWorld: true}, t.send)
	AddTool(s, Tool{Name: "read_conversation", Title: "Read or wait for a conversation's new events",
		Description: "Returns the events after the last ones read (spec 8.5), waiting up to wait_seconds for one: messages, status and responder changes, sign-in needs, and the Company's requests to talk with the user (which only the user can accept, in Poppydesk)." + statuses,
		Schema: `{"type": "object", "additionalProperties": false, "required": ["company", "conversation_id"], "properties": {
    ` + convRef + `,
    ` + waitArg + `}}`, Output: convOutput(), ReadOnly: true, Idempotent: true, OpenWorld: true}, t.read)
	AddTool(s, Tool{Name: "hand_off_conversation", Title: "Ask for a person at the Company",
		Description: "Asks the Company for a person to take over the conversation (spec 8.9). The status becomes queued until someone joins." + statuses,
		Schema:      `{"type": "object", "additionalProperties": false, "required": ["company", "conversation_id"], "properties": {` + convRef + `}}`,
		Output:      convOutput(), Idempotent: true, OpenWorld: true}, t.handoff)
	AddTool(s, Tool{Name: "close_conversation", Title: "Close a conversation",
		Description: "Closes a conversation you are done with (spec 8.12). It doesn't cancel anything the conversation started." + statuses,
		Schema:      `{"type": "object", "additionalProperties": false, "required": ["company", "conversation_id"], "properties": {` + convRef + `}}`,
		Output:      convOutput(), Destructive: true, Idempotent: true, OpenWorld: true}, t.close)
}

type convTools struct{ d Deps }

type convArgs struct {
	Company        string          `json:"company"`
	ConversationID string          `json:"conversation_id"`
	Text           string          `json:"text"`
	Data           json.RawMessage `json:"data"`
	Account        string          `json:"account"`
	WaitSeconds    *int            `json:"wait_seconds"`
}

func (a convArgs) wait() time.Duration {
	if a.WaitSeconds == nil {
		return 10 * time.Second
	}
	return time.Duration(min(max(*a.WaitSeconds, 0), maxToolWait)) * time.Second
}

// prepare decodes the arguments and resolves the Manager and the Company.
func (t *convTools) prepare(ctx context.Context, raw json.RawMessage, needID bool) (*conversation.Manager, convArgs, string, string, *Reply) {
	var a convArgs
	if r := DecodeArgs(raw, &a); r != nil {
		return nil, a, "", "", r
	}
	if needID && !headers.ValidID(a.ConversationID) {
		return nil, a, "", "", Refused("conversation_id must be the ID start_conversation returned (letters, digits, - and _); nothing was done")
	}
	p, ok := t.d.Actions.(ConversationProvider)
	if !ok {
		return nil, a, "", "", Failed(StatusUnavailable, "conversations with Company Agents are not running in this Poppydesk; nothing was done")
	}
	m, err := p.Conversations()
	if err != nil {
		return nil, a, "", "", errorReply(err, nil, a.Company)
	}
	if m == nil {
		return nil, a, "", "", Failed(StatusUnavailable, "conversations with Company Agents are not running in this Poppydesk; nothing was done")
	}
	c, r := (&tools{d: t.d}).company(ctx, a.Company)
	if r != nil {
		return nil, a, "", "", r
	}
	return m, a, c.Identifier, c.Organization.Name, nil
}

// convReply is the model's view: Poppydesk's words and fields, the Company's events as data.
func convReply(v *conversation.View, company, name, msg string) *Reply {
	f := map[string]any{"conversation_id": v.ConversationID, "status": v.Status, "responder": v.Responder}
	r := &Reply{Status: StatusOK, Message: msg, Fields: map[string]any{"conversation": f}, Company: company, CompanyName: name}
	if v.Direct {
		f["direct"], f["parent"] = true, v.Parent
	}
	if v.DirectOpen != "" {
		f["direct_conversation_open"] = v.DirectOpen
	}
	if v.Auth != nil {
		f["needs_sign_in_scopes"] = v.Auth.Scopes
		r.Message += " The Company needs the user's account for this (spec 8.11): ask the user to sign in with request_sign_in; the conversation continues after that."
	}
	if len(v.Invites) > 0 {
		f["company_asks_for_user"] = len(v.Invites)
		r.Message += " The Company asked to talk with the user directly; the user decides in the Poppydesk window."
	}
	if v.Status == conversation.StatusQueued {
		r.Message += " Waiting for a person at the Company."
	}
	events := make([]map[string]any, 0, len(v.New))
	for _, e := range v.New {
		ev := map[string]any{"type": e.Type, "event_id": e.EventID}
		switch e.Type {
		case conversation.EventMessage:
			ev["from"] = e.Role
			if e.Author != nil {
				ev["author"] = e.Author
			}
			if e.Text != "" {
				ev["text"] = e.Text
			}
			if len(e.Data) > 0 {
				ev["data"] = e.Data
			}
			if e.OperationID != "" {
				ev["operation"] = map[string]any{"operation_id": e.OperationID, "revision": e.Revision,
					"note": "not performed: waiting for the user's decision in Poppydesk"}
			}
		case conversation.EventState:
			ev["status"], ev["responder"] = e.Status, e.Responder
		case conversation.EventAuthorization:
			ev["scope"] = e.Scope
		case conversation.EventUserRequested:
			ev["reason"] = e.Reason
		default:
			ev["conversation_id"] = e.ConversationID
		}
		events = append(events, ev)
	}
	if len(events) > 0 {
		r.Data = map[string]any{"events": events}
	}
	return r
}

// convError tells the model why a conversation request failed: the Manager's words (Poppydesk's)
// as the message, the conversation codes as statuses, and through classifyError whatever the
// Company wrote into the envelope.
func convError(err error, company, name string) *Reply {
	var ce *conversation.Error
	if !errors.As(err, &ce) {
		return errorReply(err, &discovery.Company{Identifier: company, Organization: discovery.Organization{Name: name}}, company)
	}
	var v errorView
	if ce.Err != nil {
		v = classifyError(ce.Err)
	}
	status := StatusCompanyError
	switch ce.Code {
	case "sign_in_needed":
		status = StatusSignInNeeded
	case "not_found", transport.CodeConversationNotFound:
		status = StatusNotFound
	case transport.CodeConversationClosed:
		status = StatusConversationClosed
	case transport.CodeDirectConversationOpen:
		status = StatusDirectConversationOpen
	case transport.CodeMessageIDConflict:
		status = StatusMessageIDConflict
	case "ownership":
		status = StatusNotYours
	case "no_endpoint":
		status = StatusUnavailable
	case transport.CodeExtensionRequired:
		status = StatusExtensionRequired
	case "network":
		if v.status != "" {
			status = v.status
		} else {
			status = StatusNetworkError
		}
	}
	msg := ce.Op + ": " + ce.Msg
	if ce.Code == "network" && v.message != "" {
		msg = ce.Op + ": " + v.message + ". The message is kept and nothing is lost"
	}
	r := Failed(status, msg)
	r.Fields = map[string]any{}
	if ce.DirectConversationID != "" {
		r.Fields["direct_conversation_id"] = ce.DirectConversationID
	}
	if len(ce.Scopes) > 0 {
		r.Fields["needs_sign_in_scopes"] = ce.Scopes
	}
	if v.detail != "" {
		r.Fields["detail"] = v.detail
	}
	if len(r.Fields) == 0 {
		r.Fields = nil
	}
	if v.company != nil {
		r.Company, r.CompanyName, r.Data = company, name, v.company
	}
	return r
}

func (t *convTools) start(ctx context.Context, raw json.RawMessage) *Reply {
	m, a, id, name, r := t.prepare(ctx, raw, false)
	if r != nil {
		return r
	}
	v, err := m.Start(ctx, conversation.Start{Company: id, Account: a.Account, Text: a.Text, Data: a.Data, AuthorType: conversation.AuthorAgent, Wait: a.wait()})
	if err != nil {
		return convError(err, id, name)
	}
	return convReply(v, id, name, "Conversation started.")
}

func (t *convTools) send(ctx context.Context, raw json.RawMessage) *Reply {
	m, a, id, name, r := t.prepare(ctx, raw, true)
	if r != nil {
		return r
	}
	v, err := m.Send(ctx, conversation.Send{Company: id, ConversationID: a.ConversationID, Text: a.Text, Data: a.Data,
		AuthorType: conversation.AuthorAgent, Wait: a.wait()})
	if err != nil {
		return convError(err, id, name)
	}
	return convReply(v, id, name, "Message sent.")
}

func (t *convTools) read(ctx context.Context, raw json.RawMessage) *Reply {
	m, a, id, name, r := t.prepare(ctx, raw, true)
	if r != nil {
		return r
	}
	v, err := m.Read(ctx, id, a.ConversationID, a.wait())
	if err != nil {
		return convError(err, id, name)
	}
	msg := "No new events."
	if len(v.New) > 0 {
		msg = "New events."
	}
	return convReply(v, id, name, msg)
}

func (t *convTools) handoff(ctx context.Context, raw json.RawMessage) *Reply {
	m, a, id, name, r := t.prepare(ctx, raw, true)
	if r != nil {
		return r
	}
	v, err := m.Handoff(ctx, id, a.ConversationID)
	if err != nil {
		return convError(err, id, name)
	}
	return convReply(v, id, name, "Asked for a person at the Company.")
}

func (t *convTools) close(ctx context.Context, raw json.RawMessage) *Reply {
	m, a, id, name, r := t.prepare(ctx, raw, true)
	if r != nil {
		return r
	}
	v, err := m.Close(ctx, id, a.ConversationID)
	if err != nil {
		return convError(err, id, name)
	}
	return convReply(v, id, name, "Conversation closed.")
}
