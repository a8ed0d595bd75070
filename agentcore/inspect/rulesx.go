package inspect

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// ExchangeFindings are the rules one exchange shows broken (package doc): Deprecation and
// Sunset on a response (spec 3.4), an operation answered to a request that did not declare the
// Operations extension (Operations 2).
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
	signed := req.Header.Get("Poppy-Session") != ""
	if signed && !declaresOperations(req.Header.Get("Poppy-Extensions")) && len(respBody) > 0 &&
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
	return out
}

// declaresOperations reports whether a Poppy-Extensions value lists "operations";v="2". It is a
// plain scan: a value that does not parse as an RFC 9651 List declares nothing (spec 3.4), and a
// false "declared" here only hides a finding, never causes one.
func declaresOperations(v string) bool {
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if strings.HasPrefix(item, `"operations"`) && strings.Contains(item, `v="2"`) {
			return true
		}
	}
	return false
}
