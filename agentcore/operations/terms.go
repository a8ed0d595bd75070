package operations

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// RequestFacts is what the Personal Agent actually sent in the request that returned the
// operation, and optionally what the model said it intended. CheckTerms compares it with the
// operation's terms (Operations 5).
type RequestFacts struct {
	// API request.
	Method string
	Path   string
	Query  url.Values
	// PathParams are the values of the path template's parameters (e.g. from the OpenAPI path
	// /orders/{order_id}/exchanges), when known.
	PathParams map[string]string
	Body       json.RawMessage
	// MCP tool call.
	Tool      string
	Arguments json.RawMessage
	// Intent is what the model said it intended, as free-form key/values (e.g.
	// "replacement_sku": "stormline-insulated-m", "price_difference": "70.00").
	Intent map[string]string
}

// Warning is one difference CheckTerms found, as a plain-language sentence and structured fields.
// Values are Company or model content: the window shows them as text.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Term is the JSON Pointer of the term concerned ("" when none).
	Term string `json:"term,omitempty"`
	// Where is the place in the request or intent, e.g. "body /item_id", "query order_id",
	// "path parameter order_id", "arguments /replacement_sku", "intent replacement_sku".
	Where        string          `json:"where,omitempty"`
	TermValue    json.RawMessage `json:"term_value,omitempty"`
	RequestValue json.RawMessage `json:"request_value,omitempty"`
}

// Warning codes.
const (
	WarnTermsAbsent       = "terms_absent"        // no terms: nothing machine-checkable
	WarnTermsUnreadable   = "terms_unreadable"    // terms could not be decoded
	WarnTermDiffers       = "term_differs"        // a same-named request field has another value
	WarnIntentDiffers     = "intent_differs"      // the model's intent names another value
	WarnIntentNotInTerms  = "intent_not_in_terms" // the intent names something the terms don't
	WarnAmountNotInSumary = "amount_not_in_summary"
)

// CheckTerms compares the operation's terms with the request that returned it and with the
// model's stated intent, and points out every difference (Operations 5: the Personal Agent SHOULD
// check that the terms agree with the summary and with what it asked for, and point out any
// difference to the User).
//
// What is compared: each top-level term key with every field of the same name anywhere in the
// JSON body or MCP arguments (at any depth), in the query parameters and in the path parameters;
// each intent key with the top-level term of the same name (names compared after lowercasing and
// turning spaces and "-" into "_"); and each money-like term (an object with "amount" and
// "currency") with the summary, which must contain its amount as written.
//
// Comparison rule: strings are equal only when byte-for-byte equal (IDs are case-sensitive; no
// trimming or case folding, except that intent values are trimmed of surrounding spaces). Numbers
// are equal when their exact decimal values are equal (70, 70.0 and 70.00 are equal; no floating
// point). A string and a number are equal when the string is a plain decimal literal (optional
// "-", digits, optional "." and digits; no exponent, sign "+", spaces or currency symbol) with the
// same exact value: "70.00" equals 70, "$70" and "70,00" do not. Booleans and null are equal only
// to themselves (a query or path value "true" equals the boolean true). Objects are equal when
// they have the same keys with equal values; arrays when they have equal elements in order. An
// intent value compared with a money-like term is compared with its "amount".
func CheckTerms(op *Operation, req RequestFacts) []Warning {
	var out []Warning
	if len(op.Terms) == 0 {
		out = append(out, Warning{Code: WarnTermsAbsent,
			Message: "The Company gave no machine-readable terms for this operation, so nothing in its summary could be checked against the request. Read the summary carefully."})
		for _, k := range sortedKeys(req.Intent) {
			out = append(out, Warning{Code: WarnIntentNotInTerms, Where: "intent " + k,
				Message: fmt.Sprintf("The model said it intended %s = %s, but without terms this can't be checked against the operation.", Visible(k), quoteShort(req.Intent[k]))})
		}
		return out
	}
	tv, err := decodeJSON(op.Terms)
	terms, ok := tv.(map[string]any)
	if err != nil || !ok {
		return append(out, Warning{Code: WarnTermsUnreadable,
			Message: "The Company's terms could not be read as a JSON object, so nothing could be checked. Read the summary carefully."})
	}

	// Collect the request's fields by name.
	fields := map[string][]found{}
	for _, src := range []struct {
		raw   json.RawMessage
		where string
	}{{req.Body, "body"}, {req.Arguments, "arguments"}} {
		if len(src.raw) == 0 {
			continue
		}
		nodes, err := Flatten(src.raw, maxRequestDepth)
		if err != nil {
			continue
		}
		for _, n := range nodes {
			if n.Member {
				fields[n.Name] = append(fields[n.Name], found{where: src.where + " " + n.Pointer, value: n.Value})
			}
		}
	}
	for _, k := range sortedKeys(req.Query) {
		for _, v := range req.Query[k] {
			fields[k] = append(fields[k], found{where: "query " + k, value: v})
		}
	}
	for _, k := range sortedKeys(req.PathParams) {
		fields[k] = append(fields[k], found{where: "path parameter " + k, value: req.PathParams[k]})
	}

	summary := op.Summary
	for _, k := range sortedKeys(terms) {
		t := terms[k]
		ptr := memberPointer("", k)
		for _, f := range fields[k] {
			if !looseEqual(t, f.value) {
				out = append(out, Warning{Code: WarnTermDiffers, Term: ptr, Where: f.where,
					TermValue: encodeJSON(t), RequestValue: encodeJSON(f.value),
					Message: fmt.Sprintf("The terms say %s is %s, but the request sent %s in %s.",
						Visible(k), showValue(t), showValue(f.value), Visible(f.where))})
			}
		}
		if amt, ok := moneyAmount(t); ok && !strings.Contains(summary, amt) {
			out = append(out, Warning{Code: WarnAmountNotInSumary, Term: ptr + "/amount", TermValue: encodeJSON(t),
				Message: fmt.Sprintf("The terms give %s as %s, but the summary doesn't mention that amount.", Visible(k), showValue(t))})
		}
	}

	norm := map[string]string{}
	for k := range terms {
		norm[normName(k)] = k
	}
	for _, ik := range sortedKeys(req.Intent) {
		iv := strings.TrimSpace(req.Intent[ik])
		tk, ok := norm[normName(ik)]
		if !ok {
			out = append(out, Warning{Code: WarnIntentNotInTerms, Where: "intent " + ik,
				Message: fmt.Sprintf("The model said it intended %s = %s, but the terms don't say anything about %s.", Visible(ik), quoteShort(iv), Visible(ik))})
			continue
		}
		t := terms[tk]
		cmp := t
		if amt, ok := moneyAmount(t); ok {
			cmp = json.Number(amt)
		}
		if !looseEqual(cmp, iv) {
			ijs, _ := json.Marshal(iv)
			out = append(out, Warning{Code: WarnIntentDiffers, Term: memberPointer("", tk), Where: "intent " + ik,
				TermValue: encodeJSON(t), RequestValue: ijs,
				Message: fmt.Sprintf("The model said it intended %s = %s, but the terms say %s.", Visible(ik), quoteShort(iv), showValue(t))})
		}
	}
	return out
}

// maxRequestDepth is how deeply CheckTerms reads the request: encoding/json's own nesting
// limit, so every request Poppydesk could encode is read in full.
const maxRequestDepth = 10000

type found struct {
	where string
	value any
}

var plainDecimal = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// looseEqual is the comparison rule documented on CheckTerms.
func looseEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		switch y := b.(type) {
		case string:
			return x == y
		case json.Number:
			return plainDecimal.MatchString(x) && sameNumber(x, string(y))
		}
		return textEqualsScalar(x, b)
	case json.Number:
		switch y := b.(type) {
		case json.Number:
			return sameNumber(string(x), string(y))
		case string:
			return plainDecimal.MatchString(y) && sameNumber(string(x), y)
		}
		return false
	case map[string]any, []any:
		return sameContainer(a, b, looseEqual)
	case bool, nil:
		if s, ok := b.(string); ok {
			return textEqualsScalar(s, a)
		}
		return sameJSON(a, b)
	}
	return false
}

// textEqualsScalar: a query or path string "true", "false" or "null" equals that JSON literal.
func textEqualsScalar(s string, v any) bool {
	switch y := v.(type) {
	case bool:
		return (s == "true" && y) || (s == "false" && !y)
	case nil:
		return s == "null"
	}
	return false
}

// moneyAmount returns the amount of a money-like term ({"amount": …, "currency": …}) as written.
func moneyAmount(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	if _, ok := m["currency"]; !ok {
		return "", false
	}
	switch a := m["amount"].(type) {
	case string:
		return a, a != ""
	case json.Number:
		return string(a), true
	}
	return "", false
}

func normName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.NewReplacer(" ", "_", "-", "_").Replace(s)
}

// showValue writes a JSON value for a sentence: strings quoted, others as JSON, invisible
// characters made visible, long values cut.
func showValue(v any) string {
	s := string(encodeJSON(v))
	if len(s) > 120 {
		r := []rune(s)
		if len(r) > 120 {
			s = string(r[:120]) + "…"
		}
	}
	return Visible(s)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
