package modelapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

// MaxWait is the longest wait_for_approval waits in one call.
const MaxWait = 300 * time.Second

// approvalStatuses are the statuses of get_approval and wait_for_approval.
var approvalStatuses = append(slices.Clone(outcomeStatuses), StatusSuperseded)

// waitStatuses are wait_for_approval's: an approval's, and the window closed while it waited.
var waitStatuses = append(slices.Clone(approvalStatuses), StatusWindowClosed)

// ErrWindowClosed is the cause with which the host ends the calls waiting for the user when the
// user closes its window: wait_for_approval answers [StatusWindowClosed].
var ErrWindowClosed = errors.New("the user closed the Poppydesk window while this waited; nothing was approved")

// addApprovalTools adds get_approval and wait_for_approval: the model reads and waits, the user
// decides in the window (Operations 5, 7).
func addApprovalTools(s *mcp.Server, d Deps) {
	t := &tools{d: d}
	AddTool(s, Tool{Name: ToolGetApproval, Title: "Get an approval's state",
		Description: "The state of an approval by its handle, with the Company's summary and terms the user sees. Read-only." +
			"\nStatuses:" + statusList(approvalStatuses...),
		Schema: `{"type": "object", "additionalProperties": false, "required": ["approval_id"], "properties": {
			"approval_id": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The approval handle a call returned."}}}`,
		Output: output(approvalStatuses, js{"state": str("The approval's state in Poppydesk's queue (pending, approved, sending, retrying, outcome_unknown, succeeded, failed, declined, expired, superseded)."),
			"interface": str("How the operation came: api, mcp or conversation."), "expires_at": str("When the Company's terms expire (RFC 3339)."), "updated": str("When the approval last changed (RFC 3339).")},
			js{"summary": str("The Company's summary the user sees."), "terms": anyJSON("The Company's terms."),
				"result": open(js{"status": str(""), "body": anyJSON(""), "text": str(""), "content": arrayOf(contentBlock(), "")})}),
		ReadOnly: true, Idempotent: true}, t.getApproval)
	AddTool(s, Tool{Name: ToolWaitForApproval, Title: "Wait for the user's decision",
		Description: "Wait until the user decides about an approval in Poppydesk and the Company answers, or until the timeout. Read-only: waiting never decides anything, and cancelling the wait (notifications/cancelled) ends it at once without changing the approval. Send a progress token to receive progress while it waits." +
			"\nStatuses:" + statusList(waitStatuses...),
		Schema: `{"type": "object", "additionalProperties": false, "required": ["approval_id"], "properties": {
			"approval_id": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The approval handle a call returned."},
			"timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 300, "default": 60, "description": "How long to wait (at most 300 seconds)."}}}`,
		Output:   output(waitStatuses, js{"waited_up_to_seconds": integer("The timeout of this wait."), "account": str("")}, outcomeData()),
		ReadOnly: true, Idempotent: true,
		Progress: "waiting for the user's decision in Poppydesk", ProgressEvery: d.ProgressInterval,
		ProgressTotal: t.waitTotal}, t.waitForApproval)
}

// stateMessages are Poppydesk's words for an approval's state.
var stateMessages = map[string]string{
	"pending":         "not performed; waiting for the user's decision in Poppydesk",
	"approved":        "the user approved it; Poppydesk is sending it to the Company",
	"sending":         "the user approved it; Poppydesk is sending it to the Company",
	"retrying":        "the user approved it; Poppydesk is sending it to the Company again",
	"outcome_unknown": StatusMeanings[StatusOutcomeUnknown],
	"succeeded":       "the user approved it and the Company performed it",
	"failed":          "the user approved it but the Company refused or failed",
	"declined":        StatusMeanings[StatusDeclined],
	"expired":         StatusMeanings[StatusExpired],
	"superseded":      StatusMeanings[StatusSuperseded],
}

func (t *tools) approvalID(raw json.RawMessage, timeout *int) (string, *Reply) {
	var a struct {
		ApprovalID     string `json:"approval_id"`
		TimeoutSeconds *int   `json:"timeout_seconds"`
	}
	if r := DecodeArgs(raw, &a); r != nil {
		return "", r
	}
	if !validHandle(a.ApprovalID) {
		return "", Refused("approval_id must be the approval handle a call returned")
	}
	if a.TimeoutSeconds != nil {
		if timeout == nil {
			return "", Refused("unknown argument \"timeout_seconds\"; this tool takes only approval_id")
		}
		if *a.TimeoutSeconds < 1 || *a.TimeoutSeconds > int(MaxWait/time.Second) {
			return "", Refused(fmt.Sprintf("timeout_seconds must be between 1 and %d", int(MaxWait/time.Second)))
		}
		*timeout = *a.TimeoutSeconds
	}
	return a.ApprovalID, nil
}

func (t *tools) getApproval(ctx context.Context, raw json.RawMessage) *Reply {
	id, r := t.approvalID(raw, nil)
	if r != nil {
		return r
	}
	v, err := t.d.Actions.Approval(ctx, id)
	if err != nil {
		return errorReply(err, nil, "")
	}
	msg := stateMessages[v.State]
	if msg == "" {
		msg = "the approval is in state " + v.State
	}
	status := stateStatus(v.State)
	if status == StatusInProgress && v.Result != nil && outcomeStatus(v.Result.Status) == StatusOutcomeUnknown {
		status = StatusOutcomeUnknown
	}
	data := map[string]any{"summary": v.Summary}
	if len(v.Terms) > 0 {
		data["terms"] = v.Terms
	}
	if v.Result != nil {
		res := map[string]any{"status": v.Result.Status}
		if len(v.Result.Body) > 0 {
			var b any
			if json.Unmarshal(v.Result.Body, &b) == nil {
				res["body"] = b
			}
		}
		if v.Result.Text != "" {
			res["text"] = v.Result.Text
		}
		if blocks, _ := contentParts(v.Result.Content); len(blocks) > 0 {
			res["content"] = blocks
		}
		data["result"] = res
	}
	fields := map[string]any{"state": v.State, "interface": v.Interface}
	if !v.ExpiresAt.IsZero() {
		fields["expires_at"] = v.ExpiresAt.UTC().Format(time.RFC3339)
	}
	if !v.Updated.IsZero() {
		fields["updated"] = v.Updated.UTC().Format(time.RFC3339)
	}
	return &Reply{Status: status, Message: msg, ApprovalID: v.ID, Fields: fields, IsError: status == StatusFailed,
		Company: v.Company, CompanyName: v.CompanyName, Data: data}
}

// waitTotal is a wait's progress total: its timeout in seconds (0 for arguments it refuses).
func (t *tools) waitTotal(raw json.RawMessage) float64 {
	secs := defaultWaitSeconds
	if _, r := t.approvalID(raw, &secs); r != nil {
		return 0
	}
	return float64(secs)
}

// defaultWaitSeconds is wait_for_approval's timeout when the model names none.
const defaultWaitSeconds = 60

func (t *tools) waitForApproval(ctx context.Context, raw json.RawMessage) *Reply {
	secs := defaultWaitSeconds
	id, r := t.approvalID(raw, &secs)
	if r != nil {
		return r
	}
	out, err := t.d.Actions.Wait(ctx, id, time.Duration(secs)*time.Second)
	if errors.Is(context.Cause(ctx), ErrWindowClosed) {
		return &Reply{Status: StatusWindowClosed, Message: StatusMeanings[StatusWindowClosed], ApprovalID: id,
			Fields: map[string]any{"waited_up_to_seconds": secs}}
	}
	if err != nil {
		return errorReply(err, nil, "")
	}
	if out.ApprovalID == "" {
		out.ApprovalID = id
	}
	var c *discovery.Company
	if v, err := t.d.Actions.Approval(ctx, id); err == nil {
		c = &discovery.Company{Identifier: v.Company, Organization: discovery.Organization{Name: v.CompanyName}}
		if v.State == "superseded" {
			return &Reply{Status: StatusSuperseded, Message: stateMessages["superseded"], ApprovalID: id, Fields: map[string]any{"waited_up_to_seconds": secs}}
		}
	}
	return outcomeReply(out, c, map[string]any{"waited_up_to_seconds": secs})
}
