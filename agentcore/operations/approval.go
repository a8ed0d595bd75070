package operations

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/headers"
)

// Approval names the operation and the revision the User approved (Operations 6).
type Approval struct {
	OperationID string `json:"operation_id"`
	Revision    string `json:"revision"`
}

// MetaKey is the MCP `_meta` key that carries an approval (Operations 6, "MCP").
const MetaKey = "personalagentprotocol.org/approval"

// HeaderName is the HTTP header that carries an approval (Operations 6, "APIs").
const HeaderName = headers.Approval

func (a Approval) validate() error {
	if !headers.ValidID(a.OperationID) {
		return fmt.Errorf("approval: operation_id %s does not have the characters of spec 8.2 (1 to 256 letters, digits, \"-\" or \"_\")", quoteShort(a.OperationID))
	}
	if !headers.ValidID(a.Revision) {
		return fmt.Errorf("approval: revision %s does not have the characters of spec 8.2 (1 to 256 letters, digits, \"-\" or \"_\")", quoteShort(a.Revision))
	}
	return nil
}

// ApprovalHeader serializes the Poppy-Approval header value: an RFC 9651 Dictionary with
// operation_id and revision as Strings (Operations 6, "APIs"; agentcore/headers), e.g.
// `operation_id="exc_5Rt2", revision="1791487200-k3Jd9Qx2mW8v"`.
func ApprovalHeader(operationID, revision string) (string, error) {
	a := Approval{OperationID: operationID, Revision: revision}
	if err := a.validate(); err != nil {
		return "", err
	}
	return headers.FormatApproval(operationID, revision)
}

// ParseApprovalHeader parses the Poppy-Approval header (all its field lines, in order), as the
// reference Company does (Operations 6, "APIs"; agentcore/headers): members other than
// operation_id and revision are ignored, as are parameters; both must be Strings with the
// characters of spec 8.2.
func ParseApprovalHeader(values []string) (Approval, error) {
	op, rev, err := headers.ParseApproval(values)
	if err != nil {
		return Approval{}, err
	}
	a := Approval{OperationID: op, Revision: rev}
	if err := a.validate(); err != nil {
		return Approval{}, fmt.Errorf("the %s header: %w (Operations extension v2, section 6)", HeaderName, err)
	}
	return a, nil
}

// ApprovalMeta returns the `_meta` members of an MCP tools/call that carry the approval
// (Operations 6, "MCP"): {"personalagentprotocol.org/approval": {"operation_id": …, "revision": …}}.
func ApprovalMeta(a Approval) (map[string]any, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	return map[string]any{MetaKey: map[string]any{"operation_id": a.OperationID, "revision": a.Revision}}, nil
}

// ApprovalFromMeta reads the approval from an MCP request's `_meta` (raw JSON object), as the
// reference Company does. ok is false when there is none.
func ApprovalFromMeta(meta json.RawMessage) (a Approval, ok bool, err error) {
	var m map[string]json.RawMessage
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return Approval{}, false, nil
	}
	v, found := m[MetaKey]
	if !found || isNull(v) {
		return Approval{}, false, nil
	}
	a, err = decodeApproval(v)
	return a, true, err
}

// ApprovalExtensions returns the `extensions` object of a Personal Agent message that carries the
// approval (Operations 6, "Conversations"): {"operations": {"approval": {…}}}.
func ApprovalExtensions(a Approval) (json.RawMessage, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"operations": map[string]any{"approval": a}})
}

// ApprovalFromExtensions reads `operations.approval` from a message's `extensions` object.
func ApprovalFromExtensions(ext json.RawMessage) (a Approval, ok bool, err error) {
	var m struct {
		Operations map[string]json.RawMessage `json:"operations"`
	}
	if len(ext) == 0 || json.Unmarshal(ext, &m) != nil {
		return Approval{}, false, nil
	}
	v, found := m.Operations["approval"]
	if !found || isNull(v) {
		return Approval{}, false, nil
	}
	a, err = decodeApproval(v)
	return a, true, err
}

func decodeApproval(v json.RawMessage) (Approval, error) {
	var raw struct {
		OperationID *string `json:"operation_id"`
		Revision    *string `json:"revision"`
	}
	if err := json.Unmarshal(v, &raw); err != nil || raw.OperationID == nil || raw.Revision == nil {
		return Approval{}, errors.New("the approval must be an object with operation_id and revision as strings (Operations extension v2, section 6)")
	}
	a := Approval{OperationID: *raw.OperationID, Revision: *raw.Revision}
	if err := a.validate(); err != nil {
		return Approval{}, fmt.Errorf("%w (Operations extension v2, section 6)", err)
	}
	return a, nil
}

// Digest is a SHA-256 over a canonical encoding of what the User sees and approves of a revision:
// operation_id, revision, summary, terms and expires_at (DESIGN invariant 2; the SDK peer's
// "revision + digest of summary and terms"). The window sends back the digest of what it showed,
// and CanApprove refuses a decision whose digest differs from the pending revision's.
//
// Encoding: the tag "poppydesk-operation-digest-v1", then each field as an 8-byte big-endian
// length and its bytes: operation_id, revision, summary (as sent), expires_at (normalized to UTC
// RFC 3339 with nanoseconds, so equal instants digest equally), and terms re-encoded compactly
// with object keys sorted, numbers kept as written and no HTML escaping ("" when absent). Terms
// that do not decode (Parse never lets those through) are digested as their raw bytes.
func Digest(op *Operation) string {
	h := sha256.New()
	put := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	put([]byte("poppydesk-operation-digest-v1"))
	put([]byte(op.OperationID))
	put([]byte(op.Revision))
	put([]byte(op.Summary))
	put([]byte(op.ExpiresAt.UTC().Format(time.RFC3339Nano)))
	put(canonicalJSON(op.Terms))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// canonicalJSON re-encodes raw with sorted object keys, no insignificant whitespace and numbers
// as written. It returns nil for empty input and raw itself when raw does not decode.
func canonicalJSON(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return raw
	}
	return encodeJSON(v)
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// encodeJSON encodes v (from decodeJSON) compactly: encoding/json sorts map keys and writes
// json.Number as written.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}
