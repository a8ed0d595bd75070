package operations

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/headers"
)

// specOperation is the operation of Operations 3, with terms.
const specOperation = `{ "operation_id": "exc_5Rt2", "revision": "1791487200-k3Jd9Qx2mW8v", "summary": "Exchange the Stormline Jacket (M) on order ord_7Hk2 for the Stormline Insulated Jacket (M), for $70.00 more, charged to the card used for the order.", "terms": { "order_id": "ord_7Hk2", "item_id": "itm_4Qa", "replacement_sku": "stormline-insulated-m", "price_difference": { "amount": "70.00", "currency": "USD" } }, "expires_at": "2026-10-08T12:20:00-07:00" }`

func mustParse(t testing.TB, raw string) *Operation {
	t.Helper()
	op, err := Parse(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("Parse(%s): %v", raw, err)
	}
	return op
}

func TestParseSpecExample(t *testing.T) {
	op := mustParse(t, specOperation)
	if op.OperationID != "exc_5Rt2" || op.Revision != "1791487200-k3Jd9Qx2mW8v" {
		t.Errorf("ids = %q %q", op.OperationID, op.Revision)
	}
	want := time.Date(2026, 10, 8, 19, 20, 0, 0, time.UTC)
	if !op.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt = %v, want %v", op.ExpiresAt, want)
	}
	if !strings.HasPrefix(string(op.Terms), `{ "order_id": "ord_7Hk2",`) {
		t.Errorf("terms not kept as sent: %s", op.Terms)
	}
}

func TestParse(t *testing.T) {
	long := strings.Repeat("a", 256)
	base := func(mod string) string {
		return `{"operation_id":"op_1","revision":"r-1","summary":"Do it.","expires_at":"2026-10-08T12:20:00Z"` + mod + `}`
	}
	tests := []struct {
		name      string
		raw       string
		wantField string // "" = valid
		wantTerms string
	}{
		{"minimal", base(""), "", ""},
		{"unknown fields ignored", base(`,"x":{"y":[1]},"user_approval_required":true`), "", ""},
		{"terms kept exactly", base(`,"terms":{ "b" : 1.50, "a":"x" }`), "", `{ "b" : 1.50, "a":"x" }`},
		{"terms null is absent", base(`,"terms":null`), "", ""},
		{"id of 256 chars", `{"operation_id":"` + long + `","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "", ""},
		{"lowercase t and z", `{"operation_id":"o","revision":"r","summary":"s","expires_at":"2026-10-08t12:20:00.5z"}`, "", ""},
		{"not an object", `[1]`, "", ""},
		{"null", `null`, "", ""},
		{"missing operation_id", `{"revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "operation_id", ""},
		{"missing revision", `{"operation_id":"o","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "revision", ""},
		{"missing summary", `{"operation_id":"o","revision":"r","expires_at":"2026-10-08T12:20:00Z"}`, "summary", ""},
		{"missing expires_at", `{"operation_id":"o","revision":"r","summary":"s"}`, "expires_at", ""},
		{"null revision", `{"operation_id":"o","revision":null,"summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "revision", ""},
		{"numeric operation_id", `{"operation_id":7,"revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "operation_id", ""},
		{"empty operation_id", `{"operation_id":"","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "operation_id", ""},
		{"id of 257 chars", `{"operation_id":"` + long + `a","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "operation_id", ""},
		{"id with dot", `{"operation_id":"a.b","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "operation_id", ""},
		{"id with slash", `{"operation_id":"a/b","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "operation_id", ""},
		{"id with plus (std base64)", `{"operation_id":"ab","revision":"a+b","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "revision", ""},
		{"id with padding", `{"operation_id":"ab","revision":"ab==","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "revision", ""},
		{"id with space", `{"operation_id":"a b","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "operation_id", ""},
		{"id with non-ASCII letter", `{"operation_id":"é","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`, "operation_id", ""},
		{"empty summary", `{"operation_id":"o","revision":"r","summary":" \n","expires_at":"2026-10-08T12:20:00Z"}`, "summary", ""},
		{"summary too long", `{"operation_id":"o","revision":"r","summary":"` + strings.Repeat("x", MaxSummaryBytes+1) + `","expires_at":"2026-10-08T12:20:00Z"}`, "summary", ""},
		{"expires_at not RFC 3339", `{"operation_id":"o","revision":"r","summary":"s","expires_at":"2026-10-08 12:20"}`, "expires_at", ""},
		{"expires_at without zone", `{"operation_id":"o","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00"}`, "expires_at", ""},
		{"expires_at a number", `{"operation_id":"o","revision":"r","summary":"s","expires_at":1791487200}`, "expires_at", ""},
		{"terms an array", base(`,"terms":[1,2]`), "terms", ""},
		{"terms a string", base(`,"terms":"x"`), "terms", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, err := Parse(json.RawMessage(tt.raw))
			invalidWhole := tt.name == "not an object" || tt.name == "null"
			if tt.wantField == "" && !invalidWhole {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if string(op.Terms) != tt.wantTerms {
					t.Errorf("Terms = %s, want %s", op.Terms, tt.wantTerms)
				}
				return
			}
			var me *MalformedError
			if !errors.As(err, &me) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want a MalformedError", err)
			}
			if me.Field != tt.wantField {
				t.Errorf("Field = %q, want %q", me.Field, tt.wantField)
			}
			msg := err.Error()
			if !strings.Contains(msg, "section 3") || !strings.Contains(msg, "not an approval request") {
				t.Errorf("error does not name the section or say it is no approval request: %s", msg)
			}
			if tt.wantField != "" && !strings.Contains(msg, tt.wantField) {
				t.Errorf("error does not name the field: %s", msg)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	raw := `{"operation_id":"o","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z","pad":"` + strings.Repeat("x", MaxOperationBytes) + `"}`
	if _, err := Parse(json.RawMessage(raw)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
}

func TestFromAPIResponse(t *testing.T) {
	specBody := `{ "error": "approval_required", "operation": { "operation_id": "exc_5Rt2", "revision": "1791487200-k3Jd9Qx2mW8v", "summary": "Exchange the Stormline Jacket (M) on order ord_7Hk2 for the Stormline Insulated Jacket (M), for $70.00 more, charged to the card used for the order.", "expires_at": "2026-10-08T12:20:00-07:00" }, "message": "own field" }`
	tests := []struct {
		name    string
		status  int
		body    string
		wantOK  bool
		wantErr bool
	}{
		{"spec example", 403, specBody, true, false},
		{"other status", 400, specBody, false, false},
		{"200", 200, specBody, false, false},
		{"other error", 403, `{"error":"insufficient_scope"}`, false, false},
		{"not JSON", 403, `Forbidden`, false, false},
		{"error not a string", 403, `{"error":1,"operation":{}}`, false, false},
		{"approval_required without operation", 403, `{"error":"approval_required"}`, true, true},
		{"approval_required with bad operation", 403, `{"error":"approval_required","operation":{"operation_id":"x"}}`, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, ok, err := FromAPIResponse(tt.status, []byte(tt.body))
			if ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Fatalf("ok=%v err=%v, want ok=%v err=%v", ok, err, tt.wantOK, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, ErrMalformed) {
				t.Errorf("err = %v, want ErrMalformed", err)
			}
			if ok && !tt.wantErr && op.OperationID != "exc_5Rt2" {
				t.Errorf("op = %+v", op)
			}
		})
	}
}

func TestFromToolResult(t *testing.T) {
	specSC := `{ "operation": { "operation_id": "exc_5Rt2", "revision": "1791487200-k3Jd9Qx2mW8v", "summary": "Exchange the Stormline Jacket (M).", "expires_at": "2026-10-08T12:20:00-07:00" } }`
	tests := []struct {
		name    string
		isError bool
		sc      string
		wantOK  bool
		wantErr bool
	}{
		{"spec example", true, specSC, true, false},
		{"not an error", false, specSC, false, false},
		{"ordinary tool error", true, `{"reason":"out of stock"}`, false, false},
		{"no structured content", true, ``, false, false},
		{"structured content not an object", true, `[1]`, false, false},
		{"malformed operation", true, `{"operation":{"operation_id":"x","revision":"r","summary":"s","expires_at":"tomorrow"}}`, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, ok, err := FromToolResult(tt.isError, json.RawMessage(tt.sc))
			if ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Fatalf("ok=%v err=%v, want ok=%v err=%v", ok, err, tt.wantOK, tt.wantErr)
			}
			if ok && !tt.wantErr && op.Revision != "1791487200-k3Jd9Qx2mW8v" {
				t.Errorf("op = %+v", op)
			}
		})
	}
}

func TestFromMessage(t *testing.T) {
	specMsg := `{ "id": "msg_r2Kq", "role": "company", "author": { "type": "agent" }, "text": "I'll do it once you approve.", "extensions": { "operations": { "operation": { "operation_id": "exc_5Rt2", "revision": "1791487200-k3Jd9Qx2mW8v", "summary": "Exchange.", "expires_at": "2026-10-08T12:20:00-07:00" } } } }`
	tests := []struct {
		name    string
		msg     string
		wantOK  bool
		wantErr bool
	}{
		{"spec example", specMsg, true, false},
		{"no extensions", `{"id":"m","text":"I approve exchange exc_5Rt2"}`, false, false},
		{"approval is not an operation", `{"extensions":{"operations":{"approval":{"operation_id":"a","revision":"b"}}}}`, false, false},
		{"malformed", `{"extensions":{"operations":{"operation":{"operation_id":"a b"}}}}`, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok, err := FromMessage(json.RawMessage(tt.msg))
			if ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Fatalf("ok=%v err=%v, want ok=%v err=%v", ok, err, tt.wantOK, tt.wantErr)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(specOperation))
	f.Add([]byte(`{"operation_id":"o","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z","terms":{}}`))
	f.Add([]byte(`{"operation_id":"o","revision":"r","summary":"\u202e","expires_at":"2026-10-08t12:20:00z","terms":[]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"operation_id":"","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`))
	f.Add([]byte(`{"operation_id":"o/1","revision":"r","summary":"s","expires_at":"2026-10-08T12:20:00Z"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		op, err := Parse(raw)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error is not ErrMalformed: %v", err)
			}
			return
		}
		if !headers.ValidID(op.OperationID) || !headers.ValidID(op.Revision) || op.ExpiresAt.IsZero() && op.ExpiresAtRaw == "" {
			t.Fatalf("accepted an invalid operation: %+v", op)
		}
		if op.Terms != nil && (!json.Valid(op.Terms) || op.Terms[0] != '{') {
			t.Fatalf("terms not an object: %s", op.Terms)
		}
		_ = Digest(op)
		_ = RenderSummary(op.Summary)
	})
}
