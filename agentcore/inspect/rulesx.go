package inspect

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/headers"
)

// ExchangeFindings are the rules one exchange shows broken (package doc): Deprecation and
// Sunset on a response (spec 3.4), an operation answered to a request that did not declare the
// Operations extension (Operations 2), a conversation answer or a poppy.json without a field it
// must carry (spec 8.5, 8.7, 4.7; fields.go).
func ExchangeFindings(req *http.Request, respHeader http.Header, respBody []byte) []Finding {
	var out []Finding
	at := req.URL.Scheme + "://" + req.URL.Host + req.URL.Path
	if respHeader == nil {
		return nil
	}
	if dep, sun := respHeader.Get("Deprecation"), respHeader.Get("Sunset"); dep != "" || sun != "" {
		seen := "the response says the version in use is deprecated"
		if dep != "" {
			seen += " (Deprecation: " + dep + ")"
		}
		if sun != "" {
			seen += " and will stop being served (Sunset: " + sun + ")"
		}
		f := NewFinding(RuleVersionDeprecation, seen)
		f.URL = at
		out = append(out, f)
	}
	signed := req.Header.Get(headers.Session) != ""
	if signed && !headers.Declares(req.Header.Values(headers.Extensions), "operations", "2") && len(respBody) > 0 &&
		bytes.Contains(respBody, []byte(`"approval_required"`)) && bytes.Contains(respBody, []byte(`"operation"`)) {
		var body struct {
			Error     string          `json:"error"`
			Operation json.RawMessage `json:"operation"`
		}
		if json.Unmarshal(respBody, &body) == nil && body.Error == "approval_required" && len(body.Operation) > 0 {
			f := NewFinding(RuleOpsUndeclared, "the Company answered approval_required with an operation to a request whose Poppy-Extensions did not declare \"operations\";v=\"2\"")
			f.URL = at
			out = append(out, f)
		}
	}
	return append(out, fieldFindings(req, at, respHeader, respBody)...)
}

// JoinPageFindings are the rules the browser-session page's response headers break (spec 6
// step 1: the page MUST NOT be stored by caches, framed by other pages, or kept as a window
// reference by the page that opened it). It accepts what meets each requirement: Cache-Control
// with no-store; Content-Security-Policy frame-ancestors 'none' or 'self', or X-Frame-Options
// DENY or SAMEORIGIN; Cross-Origin-Opener-Policy same-origin or noopener-allow-popups. One
// finding names every header that is missing or weaker; none when all three hold.
func JoinPageFindings(pageURL string, h http.Header) []Finding {
	missing := JoinPageProblems(h)
	if len(missing) == 0 {
		return nil
	}
	f := NewFinding(RuleJoinPageHeaders, "the browser-session page "+pageURL+" was served "+strings.Join(missing, "; "))
	f.URL = pageURL
	return []Finding{f}
}

// JoinPageProblems lists, in words, what the browser-session page's headers lack (spec 6 step
// 1); see [JoinPageFindings].
func JoinPageProblems(h http.Header) []string {
	var out []string
	if !headerHasToken(h.Values("Cache-Control"), "no-store") {
		out = append(out, "without Cache-Control: no-store (caches may keep it)"+seenAs(h, "Cache-Control"))
	}
	framed := true
	for _, v := range h.Values("Content-Security-Policy") {
		for _, dir := range strings.Split(v, ";") {
			f := strings.Fields(strings.ToLower(dir))
			if len(f) == 2 && f[0] == "frame-ancestors" && (f[1] == "'none'" || f[1] == "'self'") {
				framed = false
			}
		}
	}
	if xfo := strings.ToUpper(strings.TrimSpace(h.Get("X-Frame-Options"))); xfo == "DENY" || xfo == "SAMEORIGIN" {
		framed = false
	}
	if framed {
		out = append(out, "without Content-Security-Policy: frame-ancestors 'none' (other pages may frame it)"+seenAs(h, "Content-Security-Policy"))
	}
	switch strings.ToLower(strings.TrimSpace(h.Get("Cross-Origin-Opener-Policy"))) {
	case "same-origin", "noopener-allow-popups":
	default:
		out = append(out, "without Cross-Origin-Opener-Policy: same-origin (the page that opened it keeps a reference)"+seenAs(h, "Cross-Origin-Opener-Policy"))
	}
	return out
}

func headerHasToken(values []string, token string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func seenAs(h http.Header, name string) string {
	if v := strings.Join(h.Values(name), ", "); v != "" {
		if len(v) > 120 {
			v = v[:120] + "…"
		}
		return " (it sent " + name + ": " + v + ")"
	}
	return ""
}
