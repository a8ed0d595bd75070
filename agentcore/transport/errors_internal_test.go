package transport

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestParseErrorResponse: the error shapes of spec 7 and 8.13 become typed errors, the answer
// stays readable whole for the caller, and a refusal at the Company's door is told from the
// API's own errors (Refused).
func TestParseErrorResponse(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		status    int
		wwwAuth   []string
		body      string
		retry     string
		code      string
		scopes    string
		ext, conv string
		needs     bool
		retryWant time.Duration
		refused   bool
	}{
		{"401 challenge without code", 401, []string{`Bearer realm="x", scope="orders:read"`}, "", "", "", "orders:read", "", "", true, 0, true},
		{"invalid_token", 401, []string{`Bearer error="invalid_token", resource_metadata="https://e.example/.well-known/oauth-protected-resource/mcp"`}, "", "", CodeInvalidToken, "", "", "", false, 0, true},
		{"DPoP and Bearer challenges", 403, []string{`DPoP algs="ES256", error="insufficient_scope", scope="a b"`, `Bearer error="insufficient_scope", scope="a b"`}, "", "", CodeInsufficientScope, "a b", "", "", true, 0, true},
		{"invalid_session JSON", 400, nil, `{"error":"invalid_session","error_description":"delegation expired"}`, "", CodeInvalidSession, "", "", "", false, 0, true},
		{"extension_required JSON", 403, nil, `{"error":"extension_required","extension":"example.com/gift-wrap"}`, "", CodeExtensionRequired, "", "example.com/gift-wrap", "", false, 0, true},
		{"direct_conversation_open", 409, nil, `{"error":"direct_conversation_open","conversation_id":"c_2"}`, "", CodeDirectConversationOpen, "", "", "c_2", false, 0, false},
		{"cursor_expired", 410, nil, `{"error":"cursor_expired"}`, "", CodeCursorExpired, "", "", "", false, 0, false},
		{"429 with HTTP-date", 429, nil, "", "Sun, 29 Nov 2026 12:00:05 GMT", CodeRateLimited, "", "", "", false, 5 * time.Second, true},
		{"HTML error page", 500, nil, "<html>oops</html>", "", "", "", "", "", false, 0, false},
		{"malformed challenge keeps what parsed", 401, []string{`Bearer error="invalid_token", x="unterminated`}, "", "", CodeInvalidToken, "", "", "", false, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.wwwAuth {
				h.Add("WWW-Authenticate", v)
			}
			if tc.retry != "" {
				h.Set("Retry-After", tc.retry)
			}
			resp := &http.Response{StatusCode: tc.status, Header: h, Body: io.NopCloser(strings.NewReader(tc.body))}
			_, pe := readErrorResponse("GET", "https://e.example/x", resp, now)
			if pe.Code != tc.code || strings.Join(pe.Scopes, " ") != tc.scopes || pe.Extension != tc.ext || pe.ConversationID != tc.conv ||
				pe.NeedsScopes() != tc.needs || pe.RetryAfter != tc.retryWant || pe.Refused() != tc.refused {
				t.Fatalf("got %+v (refused %v)", pe, pe.Refused())
			}
			if b, err := io.ReadAll(resp.Body); err != nil || string(b) != tc.body {
				t.Fatalf("the answer as the caller reads it: %q, %v", b, err)
			}
			if !strings.Contains(pe.Error(), "HTTP") {
				t.Fatalf("Error() = %s", pe.Error())
			}
		})
	}
}
