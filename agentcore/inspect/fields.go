package inspect

// Fields a Company's answers must carry, found missing or malformed in one exchange: a
// conversation answer's fields (spec 8.5, 8.7) and poppy.json's scope hints (spec 4.7). The
// engine reads such answers leniently (a missing has_more ends a page, a scope hint without
// personal_data says nothing about personal data), so without a finding the developer would
// never learn of it; `poppydesk check` judges the same fields with these functions.

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strings"
)

// ConversationProblems says which fields a successful conversation answer lacks (spec 8.5,
// 8.7): a read's conversation_id, events, cursor, has_more, status and responder, or a POST
// answer's status and responder, and a Company message (role company) without author.type agent
// or human; what names the answer in the words. Empty when nothing is missing.
func ConversationProblems(what string, body []byte, read bool) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return []string{what + " is not a JSON object"}
	}
	need := []string{"status", "responder"}
	if read {
		need = []string{"conversation_id", "events", "cursor", "has_more", "status", "responder"}
	}
	var missing, out []string
	for _, f := range need {
		if v, ok := m[f]; !ok || string(v) == "null" {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		out = append(out, fmt.Sprintf("%s has no %s", what, strings.Join(missing, ", ")))
	}
	var events []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Message *struct {
			Role   string `json:"role"`
			Author *struct {
				Type string `json:"type"`
			} `json:"author"`
		} `json:"message"`
	}
	if read && json.Unmarshal(m["events"], &events) == nil {
		for _, e := range events {
			if e.Type != "message" || e.Message == nil || e.Message.Role != "company" {
				continue
			}
			if e.Message.Author == nil || e.Message.Author.Type != "agent" && e.Message.Author.Type != "human" {
				t := ""
				if e.Message.Author != nil {
					t = e.Message.Author.Type
				}
				out = append(out, fmt.Sprintf("the Company message %s has author.type %q, not agent or human", e.ID, t))
			}
		}
	}
	return out
}

// ScopeHintProblems says which auth.scope_hints entries of a poppy.json lack changes or
// personal_data, or give them another type (spec 4.7: a Company MUST include both fields in
// each entry). Empty when the document has none or every entry is whole.
func ScopeHintProblems(poppyJSON []byte) []string {
	var doc struct {
		Auth *struct {
			ScopeHints map[string]map[string]json.RawMessage `json:"scope_hints"`
		} `json:"auth"`
	}
	if json.Unmarshal(poppyJSON, &doc) != nil || doc.Auth == nil {
		return nil
	}
	names := make([]string, 0, len(doc.Auth.ScopeHints))
	for n := range doc.Auth.ScopeHints {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		h := doc.Auth.ScopeHints[n]
		var changes string
		var pd bool
		var bad []string
		if v, ok := h["changes"]; !ok || json.Unmarshal(v, &changes) != nil {
			bad = append(bad, "changes (a string)")
		}
		if v, ok := h["personal_data"]; !ok || json.Unmarshal(v, &pd) != nil || string(v) == "null" {
			bad = append(bad, "personal_data (true or false)")
		}
		if len(bad) > 0 {
			out = append(out, fmt.Sprintf("the scope hint of %q has no %s", n, strings.Join(bad, " and no ")))
		}
	}
	return out
}

// fieldFindings are the findings of ConversationProblems and ScopeHintProblems for one
// exchange: a poppy.json (any version's document: organization and protocol_version), and a
// signed request's JSON answer that names a conversation (a start, a message, a read of its
// events). An error answer (a body with error) is none of these.
func fieldFindings(req *http.Request, at string, respHeader http.Header, respBody []byte) []Finding {
	ct, _, _ := mime.ParseMediaType(respHeader.Get("Content-Type"))
	if len(respBody) == 0 || ct != "application/json" && !strings.HasSuffix(ct, "+json") {
		return nil
	}
	var probe struct {
		Error          json.RawMessage `json:"error"`
		ConversationID json.RawMessage `json:"conversation_id"`
		Events         json.RawMessage `json:"events"`
		Organization   json.RawMessage `json:"organization"`
		Version        json.RawMessage `json:"protocol_version"`
	}
	if json.Unmarshal(respBody, &probe) != nil || probe.Error != nil {
		return nil
	}
	var seen []string
	rule := ""
	switch {
	case req.Method == http.MethodGet && probe.Organization != nil && probe.Version != nil:
		rule, seen = RuleScopeHints, ScopeHintProblems(respBody)
	case req.Header.Get("Poppy-Session") == "":
	case req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/events") && (probe.Events != nil || probe.ConversationID != nil):
		rule, seen = RuleConvFields, ConversationProblems("the read of "+at, respBody, true)
	case req.Method == http.MethodPost && probe.ConversationID != nil:
		rule, seen = RuleConvFields, ConversationProblems("the answer to POST "+at, respBody, false)
	}
	if len(seen) == 0 {
		return nil
	}
	f := NewFinding(rule, strings.Join(seen, "; "))
	f.URL = at
	if rule == RuleScopeHints {
		// Discovery reads poppy.json before the Company's identifier is known: the domain
		// names it, as for discovery's own findings.
		f.Company = req.URL.Host
	}
	return []Finding{f}
}
