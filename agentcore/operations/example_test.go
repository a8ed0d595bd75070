package operations_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/operations"
)

func Example() {
	body := []byte(`{"error":"approval_required","operation":{"operation_id":"exc_5Rt2","revision":"1791487200-k3Jd9Qx2mW8v","summary":"Exchange for **$70.00 more**. [Details](https://evil.example)","terms":{"replacement_sku":"stormline-insulated-m"},"expires_at":"2026-10-08T12:20:00-07:00"}}`)
	op, ok, err := operations.FromAPIResponse(403, body)
	if !ok || err != nil {
		fmt.Println("not an operation:", err)
		return
	}
	fmt.Println(operations.RenderSummary(op.Summary).Text())
	for _, w := range operations.CheckTerms(op, operations.RequestFacts{Body: json.RawMessage(`{"replacement_sku":"stormline-insulated-l"}`)}) {
		fmt.Println(w.Message)
	}
	// The window showed op and the User clicked Approve.
	now := time.Date(2026, 10, 8, 19, 0, 0, 0, time.UTC)
	decision := operations.Decision{OperationID: op.OperationID, Revision: op.Revision, Digest: operations.Digest(op)}
	if err := operations.CanApprove(now, operations.Pending{Latest: op, State: operations.StatePending}, decision); err != nil {
		fmt.Println(err)
		return
	}
	state, _ := operations.Next(operations.StatePending, operations.EventApprove)
	fmt.Println(state)
	h, _ := operations.ApprovalHeader(op.OperationID, op.Revision)
	fmt.Println(operations.HeaderName + ": " + h)
	// Output:
	// Exchange for $70.00 more. [Details](https://evil.example)
	// The terms say replacement_sku is "stormline-insulated-m", but the request sent "stormline-insulated-l" in body /replacement_sku.
	// approved
	// Poppy-Approval: operation_id="exc_5Rt2", revision="1791487200-k3Jd9Qx2mW8v"
}
