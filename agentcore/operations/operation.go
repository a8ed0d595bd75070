package operations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/poppydesk/poppydesk/agentcore/headers"
)

// Version is the version of the Operations extension this package implements (Operations 2).
const Version = "2"

// ExtensionsHeader is the Poppy-Extensions member a Personal Agent sends to declare this version
// (Operations 2, spec 3.4).
const ExtensionsHeader = `"operations";v="2"`

// Limits on Company input. The spec sets none; these keep a hostile Company from making the engine
// or the window process megabytes of text that no User could read before deciding (Operations 3:
// the summary is written "so the User can decide from it alone").
const (
	MaxOperationBytes = 256 << 10
	MaxSummaryBytes   = 32 << 10
)

// Operation is one revision of an operation (Operations 3).
type Operation struct {
	OperationID string `json:"operation_id"`
	Revision    string `json:"revision"`
	Summary     string `json:"summary"`
	// Terms is the `terms` object exactly as the Company sent it, or nil when absent.
	Terms json.RawMessage `json:"terms,omitempty"`
	// ExpiresAt is `expires_at`, parsed (RFC 3339). ExpiresAtRaw is the text as sent.
	ExpiresAt    time.Time `json:"-"`
	ExpiresAtRaw string    `json:"expires_at"`
}

// Expired reports whether an approval of this revision is no longer accepted at now:
// `expires_at` is the last time an approval is accepted (Operations 3).
func (o *Operation) Expired(now time.Time) bool { return now.After(o.ExpiresAt) }

// ErrMalformed matches every MalformedError.
var ErrMalformed = errors.New("malformed operation")

// MalformedError says which field of an operation a Company got wrong. A malformed operation is
// never an approval request: the engine tells the User and the model that the action was not
// performed and that the Company's answer was invalid.
type MalformedError struct {
	Field   string // JSON name of the field, or "" for the operation as a whole
	Section string // e.g. "Operations 3"
	Problem string // what is wrong, in words
}

func (e *MalformedError) Error() string {
	where := "the operation"
	if e.Field != "" {
		where = fmt.Sprintf("field %q of the operation", e.Field)
	}
	return fmt.Sprintf("the Company sent a malformed operation: %s %s (Operations extension v2, section %s); it is not an approval request and nothing can be approved — the Company must fix its response",
		where, e.Problem, strings.TrimPrefix(e.Section, "Operations "))
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }

func malformed(field, section, format string, a ...any) error {
	return &MalformedError{Field: field, Section: section, Problem: fmt.Sprintf(format, a...)}
}

// Parse validates an operation from the Company (Operations 3). Unknown fields are ignored;
// `terms` is kept byte for byte.
func Parse(raw json.RawMessage) (*Operation, error) {
	if len(raw) > MaxOperationBytes {
		return nil, malformed("", "Operations 3", "is %d bytes, more than the %d this Personal Agent accepts", len(raw), MaxOperationBytes)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, malformed("", "Operations 3", "is not a JSON object")
	}
	op := &Operation{}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"operation_id", &op.OperationID}, {"revision", &op.Revision}, {"summary", &op.Summary}, {"expires_at", &op.ExpiresAtRaw}} {
		v, ok := fields[f.name]
		if !ok || isNull(v) {
			return nil, malformed(f.name, "Operations 3", "is missing; it is required")
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return nil, malformed(f.name, "Operations 3", "is not a JSON string")
		}
	}
	for _, id := range []struct{ name, v string }{{"operation_id", op.OperationID}, {"revision", op.Revision}} {
		if !headers.ValidID(id.v) {
			return nil, malformed(id.name, "Operations 3 and spec 8.2", "must be 1 to 256 characters from letters, digits, \"-\" and \"_\" (got %s)", quoteShort(id.v))
		}
	}
	if strings.TrimSpace(op.Summary) == "" {
		return nil, malformed("summary", "Operations 3", "is empty; the User must be able to decide from it alone")
	}
	if len(op.Summary) > MaxSummaryBytes {
		return nil, malformed("summary", "Operations 3", "is %d bytes, more than the %d this Personal Agent shows", len(op.Summary), MaxSummaryBytes)
	}
	t, err := ParseRFC3339(op.ExpiresAtRaw)
	if err != nil {
		return nil, malformed("expires_at", "Operations 3", "is not an RFC 3339 date-time (got %s)", quoteShort(op.ExpiresAtRaw))
	}
	op.ExpiresAt = t
	if v, ok := fields["terms"]; ok && !isNull(v) {
		v = bytes.TrimSpace(v)
		if len(v) == 0 || v[0] != '{' {
			return nil, malformed("terms", "Operations 3", "must be a JSON object when present")
		}
		op.Terms = append(json.RawMessage(nil), v...)
	}
	return op, nil
}

// ParseRFC3339 accepts RFC 3339 date-times, including the lowercase "t" and "z" the RFC allows,
// as Parse reads expires_at (Operations 3).
func ParseRFC3339(s string) (time.Time, error) {
	if len(s) > 64 {
		return time.Time{}, errors.New("too long")
	}
	s2 := strings.Map(func(r rune) rune {
		switch r {
		case 't':
			return 'T'
		case 'z':
			return 'Z'
		}
		return r
	}, s)
	return time.Parse(time.RFC3339Nano, s2)
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

func quoteShort(s string) string {
	if len(s) > 80 {
		s = s[:80]
		for !utf8.ValidString(s) && len(s) > 0 {
			s = s[:len(s)-1]
		}
		return Visible(fmt.Sprintf("%q", s)) + "…"
	}
	return Visible(fmt.Sprintf("%q", s))
}

// FromAPIResponse recognizes an operation in an API response (Operations 4, "APIs"): HTTP 403
// with a JSON body whose `error` is "approval_required". It returns ok=false for any other
// response. An approval_required body without a valid operation is a MalformedError.
func FromAPIResponse(status int, body []byte) (op *Operation, ok bool, err error) {
	if status != http.StatusForbidden {
		return nil, false, nil
	}
	var b struct {
		Error     json.RawMessage `json:"error"`
		Operation json.RawMessage `json:"operation"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil, false, nil
	}
	var code string
	if json.Unmarshal(b.Error, &code) != nil || code != "approval_required" {
		return nil, false, nil
	}
	if len(b.Operation) == 0 || isNull(b.Operation) {
		return nil, true, malformed("operation", "Operations 4", "is missing from an approval_required response")
	}
	op, err = Parse(b.Operation)
	return op, true, err
}

// FromToolResult recognizes an operation in an MCP CallToolResult (Operations 4, "MCP"): isError
// true and `operation` in structuredContent (passed raw, so this package does not depend on the
// MCP SDK's types). Any other result is ok=false: an ordinary tool result or tool error.
func FromToolResult(isError bool, structuredContent json.RawMessage) (op *Operation, ok bool, err error) {
	if !isError || len(structuredContent) == 0 {
		return nil, false, nil
	}
	var sc map[string]json.RawMessage
	if json.Unmarshal(structuredContent, &sc) != nil {
		return nil, false, nil
	}
	v, found := sc["operation"]
	if !found || isNull(v) {
		return nil, false, nil
	}
	op, err = Parse(v)
	return op, true, err
}

// FromMessage recognizes an operation in a conversation message (Operations 4, "Conversations"):
// `extensions.operations.operation` of the message object. Only Company messages carry
// operations; the caller checks the role.
func FromMessage(message json.RawMessage) (op *Operation, ok bool, err error) {
	var m struct {
		Extensions struct {
			Operations map[string]json.RawMessage `json:"operations"`
		} `json:"extensions"`
	}
	if json.Unmarshal(message, &m) != nil {
		return nil, false, nil
	}
	v, found := m.Extensions.Operations["operation"]
	if !found || isNull(v) {
		return nil, false, nil
	}
	op, err = Parse(v)
	return op, true, err
}
