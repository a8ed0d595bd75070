package approvals_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// TestMalformedOperationIsAnError: an approval_required answer whose operation is malformed is a
// clear error for the caller naming the field and section (Operations 3, 4), never an approval
// request: nothing is stored, no event, nothing to approve. The Company is a second API of the
// reference Company's poppy.json, served on other.shop.localhost over the same TLS listener.
func TestMalformedOperationIsAnError(t *testing.T) {
	tests := []struct {
		name      string
		operation any
		field     string
	}{
		{name: "missing revision", operation: map[string]any{"operation_id": "exc_1", "summary": "Exchange it.", "expires_at": "2030-01-01T00:00:00Z"}, field: "revision"},
		{name: "bad expires_at", operation: map[string]any{"operation_id": "exc_1", "revision": "r1", "summary": "Exchange it.", "expires_at": "tomorrow"}, field: "expires_at"},
		{name: "operation_id with forbidden characters", operation: map[string]any{"operation_id": "exc 1/..", "revision": "r1", "summary": "Exchange it.", "expires_at": "2030-01-01T00:00:00Z"}, field: "operation_id"},
		{name: "empty summary", operation: map[string]any{"operation_id": "exc_1", "revision": "r1", "summary": " ", "expires_at": "2030-01-01T00:00:00Z"}, field: "summary"},
		{name: "no operation", operation: nil, field: "operation"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{edit: func(doc map[string]any) {
				list := doc["apis"].([]any)
				first := list[0].(map[string]any)["url"].(string) // https://shop.localhost:PORT/api/openapi.json
				bad := strings.Replace(strings.Replace(first, refcompany.ShopHost, refcompany.OtherHost, 1), "/api/", "/bad/", 1)
				doc["apis"] = append(list, map[string]any{"type": "openapi", "url": bad, "description": "A broken API"})
			}})
			mux := http.NewServeMux()
			mux.HandleFunc("/bad/openapi.json", func(w http.ResponseWriter, r *http.Request) {
				json.NewEncoder(w).Encode(map[string]any{"openapi": "3.1.0", "info": map[string]any{"title": "bad", "version": "1"},
					"servers": []any{map[string]any{"url": "/bad"}},
					"paths": map[string]any{"/do": map[string]any{"post": map[string]any{"operationId": "doIt",
						"responses": map[string]any{"200": map[string]any{"description": "ok"}}}}}})
			})
			mux.HandleFunc("/bad/do", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				body := map[string]any{"error": "approval_required"}
				if tc.operation != nil {
					body["operation"] = tc.operation
				}
				json.NewEncoder(w).Encode(body)
			})
			f.s.AddHost(refcompany.OtherHost, mux)
			ctx := context.Background()
			_, err := f.q.CallAPI(ctx, approvals.APICall{Company: f.company, Account: account, API: f.s.URL(refcompany.OtherHost, "/bad/openapi.json"),
				OperationID: "doIt", Input: inputFor("", []byte(`{}`))})
			var me *operations.MalformedError
			if !errors.As(err, &me) || me.Field != tc.field {
				t.Fatalf("err = %v, want a malformed %q", err, tc.field)
			}
			if items, _ := f.q.List(ctx); len(items) != 0 || len(f.eventList()) != 0 {
				t.Fatalf("%d items, events %v", len(items), f.eventList())
			}
		})
	}
}
