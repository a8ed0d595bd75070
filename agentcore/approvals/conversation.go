package approvals

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// ConversationSender sends an approval as a conversation message (Operations 6,
// "Conversations"); *conversation.Manager implements it.
type ConversationSender interface {
	SendApproval(ctx context.Context, company, conversationID, messageID string, a operations.Approval, wait time.Duration) (*conversation.View, error)
}

var _ ConversationSender = (*conversation.Manager)(nil)

// ProposeFromConversation puts an operation found in a Company message (Operations 4,
// "Conversations") in the same queue and dialog as the API and MCP ones: stored durably as a
// pending approval before anything is emitted; a later message with a new revision of the same
// operation_id supersedes the earlier one (a new revision of the same item, with Changes); the
// same revision again changes nothing. Wire it as conversation.Config.OnOperation.
func (q *Queue) ProposeFromConversation(ctx context.Context, f conversation.OperationFound) (*Outcome, error) {
	if f.Operation == nil || len(f.Raw) == 0 {
		return nil, errors.New("approvals: a conversation operation needs the parsed operation and its JSON")
	}
	u := ""
	if c, err := q.cfg.Engine.Company(ctx, f.Company); err == nil {
		if ep, ok := c.AgentEndpoint(); ok {
			u = ep + "/" + f.ConversationID + "/messages"
		}
	}
	rr := &request{Method: http.MethodPost, URL: u, Conversation: f.ConversationID,
		Target: f.Company + " conversation " + f.ConversationID + " " + f.Operation.OperationID}
	unlock := q.lock("target:" + rr.Target)
	defer unlock()
	if held, err := q.held(ctx, rr.Target); held != nil || err != nil {
		return held, err
	}
	return q.propose(ctx, proposal{company: f.Company, account: f.Account, sid: f.SID, iface: InterfaceConversation,
		req: rr, op: f.Operation, raw: f.Raw, start: q.now()})
}

// conversationMessageID is the message ID of an approval's message: derived from the approval
// and the revision, so every retry, also after a restart, is the SAME message, which the Company
// recognizes (spec 8.3, Operations 7: "a message retried with the same ID gets the original
// response").
func conversationMessageID(approvalID string, op *operations.Operation) string {
	h := sha256.Sum256([]byte("poppydesk-approval-message\x00" + approvalID + "\x00" + op.OperationID + "\x00" + op.Revision))
	return "msg_apr_" + base64.RawURLEncoding.EncodeToString(h[:18])
}

// sendConversation sends the approval in the conversation that returned the operation
// (Operations 6 "Conversations"). The Company Agent says how it went in a later message, which
// the window and the model read in the conversation; the queue records that the Company accepted
// the approval.
func (q *Queue) sendConversation(ctx context.Context, rec *store.Approval, req *request, op *operations.Operation) sendResult {
	if q.cfg.Conversations == nil {
		return notSentResult(errors.New("conversations are not running in this Poppydesk"))
	}
	_, err := q.cfg.Conversations.SendApproval(ctx, rec.Company, req.Conversation, conversationMessageID(rec.ID, op),
		operations.Approval{OperationID: op.OperationID, Revision: op.Revision}, 0)
	if err == nil {
		return sendResult{answer: operations.AnswerPerformed, note: resultNote{Message: "the Company accepted the user's approval in the conversation; its agent says how it went in a later message there"}}
	}
	var ce *conversation.Error
	if errors.Is(err, transport.ErrNotSent) || !errors.As(err, &ce) {
		return errorResult(err)
	}
	switch ce.Code {
	case "network", "bad_response", "rate_limited":
		return sendResult{answer: operations.AnswerNone, note: resultNote{Detail: ce.Error()}, why: "no usable answer from the conversation endpoint"}
	case "sign_in_needed", "invalid_session", "session_ended", "version_unsupported", "invalid_token", "insufficient_scope", "extension_required":
		return sendResult{answer: operations.AnswerTurnedAway, note: resultNote{Detail: ce.Error()}, why: "the Company refused the message at its door, before handling it"}
	}
	return sendResult{answer: operations.AnswerRefused, note: resultNote{Detail: ce.Error(), Text: ce.Code,
		Message: "not performed: the Company did not accept the approval in the conversation"}}
}
