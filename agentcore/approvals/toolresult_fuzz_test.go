package approvals

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/apis"
)

// idChars are the characters of spec 8.2 IDs, which operation_id and revision use.
var idChars = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

// FuzzToolResultOutcome: what an MCP tool result becomes in the queue (Operations 2, 4; the
// apis.ToolResult the MCP client made of the server's answer). Oracles, each one a wrong
// implementation would break:
//   - a result without isError is the Company's data, verbatim, never an operation;
//   - an operation is proposed only for an error result of a call that declared the
//     extension, and then it is exactly the structuredContent's operation member (its ID
//     characters, a non-blank summary, raw bytes as sent);
//   - for a call that did not declare the extension nothing is ever proposed, and an operation
//     member makes it the Company's error (StatusCompanyError), quoting nothing in the message;
//   - any other error result is a failure with the Company's data verbatim.
func FuzzToolResultOutcome(f *testing.F) {
	op := `{"operation":{"operation_id":"exc_5Rt2","revision":"1791487200-k3Jd9Qx2mW8v","summary":"Exchange the jacket.","expires_at":"2026-10-08T12:20:00-07:00","terms":{"a":1}}}`
	f.Add(true, true, []byte(op), "Not done yet.")
	f.Add(true, false, []byte(op), "Not done yet.")
	f.Add(false, true, []byte(op), "done")
	f.Add(true, true, []byte(`{"operation":{"operation_id":"a b","revision":"r","summary":"s","expires_at":"x"}}`), "")
	f.Add(true, true, []byte(`{"operation":null,"status":"in_progress"}`), "")
	f.Add(true, true, []byte(`[1,2]`), "error")
	f.Add(true, true, []byte(``), "")
	f.Fuzz(func(t *testing.T, isError, declared bool, sc []byte, text string) {
		var structured json.RawMessage
		if len(sc) > 0 {
			structured = sc
		}
		v := judgeToolResult(&apis.ToolResult{IsError: isError, StructuredContent: structured, Text: text}, declared)
		var members map[string]json.RawMessage
		isObject := json.Unmarshal(sc, &members) == nil && members != nil
		opMember, hasOp := members["operation"]
		hasOp = isObject && hasOp && !bytes.Equal(bytes.TrimSpace(opMember), []byte("null"))

		if n := boolCount(v.op != nil, v.err != nil, v.outcome != nil); n != 1 {
			t.Fatalf("%d of proposal, error and outcome set: %+v", n, v)
		}
		switch {
		case !isError:
			if v.outcome == nil || v.outcome.Status != StatusDone || !bytes.Equal(v.outcome.Body, structured) || v.outcome.Text != text {
				t.Fatalf("a successful result is not the Company's data verbatim: %+v", v)
			}
		case v.op != nil:
			checkProposed(t, v, declared, hasOp, opMember)
		case v.err != nil:
			if !declared || !hasOp {
				t.Fatalf("a malformed-operation error without a declared call and an operation member: %v", v.err)
			}
		default:
			checkErrorOutcome(t, v.outcome, declared, hasOp, structured, text)
		}
	})
}

// checkProposed: an operation is proposed only for a call that declared the extension, and it
// is exactly the structuredContent's operation member, valid by Operations 3.
func checkProposed(t *testing.T, v toolVerdict, declared, hasOp bool, opMember json.RawMessage) {
	t.Helper()
	if !declared {
		t.Fatal("an operation was proposed for a call that did not declare the extension (Operations 2)")
	}
	if !hasOp || !bytes.Equal(v.raw, opMember) {
		t.Fatalf("the proposed operation is not the structuredContent's operation member: %s vs %s", v.raw, opMember)
	}
	var want struct {
		OperationID string `json:"operation_id"`
		Revision    string `json:"revision"`
		Summary     string `json:"summary"`
	}
	if err := json.Unmarshal(opMember, &want); err != nil || want.OperationID != v.op.OperationID || want.Revision != v.op.Revision || want.Summary != v.op.Summary {
		t.Fatalf("proposed %+v from %s", v.op, opMember)
	}
	if !idChars.MatchString(v.op.OperationID) || !idChars.MatchString(v.op.Revision) || strings.TrimSpace(v.op.Summary) == "" || v.op.ExpiresAt.IsZero() {
		t.Fatalf("proposed an operation that breaks Operations 3: %+v", v.op)
	}
}

// checkErrorOutcome: an error result that proposes nothing is the Company's error when it
// carries an operation the call did not declare, and otherwise a failure with its data verbatim.
func checkErrorOutcome(t *testing.T, o *Outcome, declared, hasOp bool, structured json.RawMessage, text string) {
	t.Helper()
	switch {
	case hasOp && !declared:
		if o.Status != StatusCompanyError || o.Message != MessageUndeclaredOperation || o.ApprovalID != "" {
			t.Fatalf("an undeclared operation is not the Company's error: %+v", o)
		}
	case hasOp:
		t.Fatalf("an operation member of a declared call became neither a proposal nor an error: %+v", o)
	default:
		if o.Status != StatusFailed || !bytes.Equal(o.Body, structured) || o.Text != text {
			t.Fatalf("an error result without an operation is not a failure with the data verbatim: %+v", o)
		}
	}
}

func boolCount(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
