// Package redact keeps secrets out of logs and of the inspector's stored exchanges
// (docs/DESIGN.md invariant 5; spec 10.2 "Secrets and the model").
//
// Secrets are the Session JWT (Poppy-Session), access and refresh tokens, DPoP proofs, client
// assertions, authorization and device codes, PKCE verifiers, browser join codes, private keys and
// cookies. This package redacts them by name (header names, JSON field names, slog attribute keys,
// URL query parameters) and by shape (anything that looks like a compact JWS), so that a secret
// placed under an unexpected name is still caught when it is a JWT. Values are replaced, never
// hashed: a hash of a low-entropy code could be brute-forced.
package redact

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Mask replaces a secret value.
const Mask = "[redacted]"

// secretNames are lowercased names of headers, JSON fields, query parameters and log keys whose
// values are secret.
var secretNames = map[string]bool{
	"poppy-session": true, "authorization": true, "dpop": true, "cookie": true, "set-cookie": true,
	"proxy-authorization": true, "poppy-approval": false,
	"access_token": true, "refresh_token": true, "id_token": true, "token": true,
	"code": true, "code_verifier": true, "device_code": true, "client_assertion": true,
	"assertion": true, "private_key": true, "private_jwk": true, "d": true, "p": true, "q": true,
	"dp": true, "dq": true, "qi": true, "secret": true, "password": true, "session_jwt": true,
	"delegation": true, "poppy_dlg": true, "join_code": true, "user_id": true, "sub": true,
	"agent_id": true, "state": true,
}

// IsSecretName reports whether values under name (a header, JSON field, query parameter or log
// key; case-insensitive) are secret.
func IsSecretName(name string) bool { return secretNames[strings.ToLower(name)] }

var jwsShape = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*`)

// textPair finds `"name": "value"` and `name=value` pairs in text that is not valid JSON (a
// truncated body, an error message), so a secret under a secret name is masked there too.
var textPair = regexp.MustCompile(`(?i)("(?:` + namesAlt() + `)"\s*:\s*")([^"]*)|\b((?:` + namesAlt() + `)=)([^&\s"]*)`)

func namesAlt() string {
	var alt []string
	for n, secret := range secretNames {
		if secret && len(n) > 2 {
			alt = append(alt, regexp.QuoteMeta(n))
		}
	}
	sort.Strings(alt)
	return strings.Join(alt, "|")
}

// Text masks, in free text such as an error message, a log line or a URL, the values of
// `name=value` and `"name": "value"` pairs whose name is secret (code=..., "access_token": "..."),
// and anything shaped like a compact JWS/JWT. It is what JSON does to a body that is not JSON.
func Text(s string) string { return text(s) }

// inputTag is an HTML input element, and inputAttr one of its attributes: a page's hidden form
// field can carry a secret (a browser-session page's one-time code, spec 6), which text masks
// when the field's name is secret.
var (
	inputTag  = regexp.MustCompile(`(?is)<input\b[^>]*>`)
	inputAttr = regexp.MustCompile(`(?is)\b(name|value)(\s*=\s*)("[^"]*"|'[^']*'|[^\s"'>]+)`)
)

// maskInputs masks the value of every input element of HTML text whose name is secret.
func maskInputs(s string) string {
	return inputTag.ReplaceAllStringFunc(s, func(tag string) string {
		secret := false
		for _, m := range inputAttr.FindAllStringSubmatch(tag, -1) {
			if strings.EqualFold(m[1], "name") && IsSecretName(strings.Trim(m[3], `"'`)) {
				secret = true
			}
		}
		if !secret {
			return tag
		}
		return inputAttr.ReplaceAllStringFunc(tag, func(a string) string {
			m := inputAttr.FindStringSubmatch(a)
			if !strings.EqualFold(m[1], "value") {
				return a
			}
			return m[1] + m[2] + `"` + Mask + `"`
		})
	})
}

func text(s string) string {
	if !strings.ContainsAny(s, "=:") {
		return String(s)
	}
	if strings.Contains(strings.ToLower(s), "<input") {
		s = maskInputs(s)
	}
	s = textPair.ReplaceAllStringFunc(s, func(m string) string {
		sub := textPair.FindStringSubmatch(m)
		if sub[1] != "" {
			return sub[1] + Mask
		}
		return sub[3] + Mask
	})
	return String(s)
}

// String masks anything in s that has the shape of a compact JWS/JWT.
func String(s string) string {
	if !strings.Contains(s, "eyJ") {
		return s
	}
	return jwsShape.ReplaceAllString(s, Mask)
}

// Header returns a copy of h with secret header values masked.
func Header(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		cp := make([]string, len(vs))
		for i, v := range vs {
			if IsSecretName(k) {
				cp[i] = Mask
			} else {
				cp[i] = String(v)
			}
		}
		out[k] = cp
	}
	return out
}

// URL returns u as a string with secret query parameters masked.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	if u.RawQuery == "" {
		return String(u.String())
	}
	cp := *u
	q := cp.Query()
	for k := range q {
		if IsSecretName(k) {
			q[k] = []string{Mask}
		}
	}
	cp.RawQuery = q.Encode()
	return String(cp.String())
}

// JSON masks secret fields at any depth of a JSON document. Input that is not JSON is treated as
// text (JWS shapes masked; form-encoded bodies have their secret parameters masked).
func JSON(body []byte) []byte {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		if vals, err := url.ParseQuery(string(body)); err == nil && len(vals) > 0 && !strings.ContainsAny(string(body), " \n{<") {
			for k := range vals {
				if IsSecretName(k) {
					vals[k] = []string{Mask}
				}
			}
			return []byte(String(vals.Encode()))
		}
		return []byte(text(string(body)))
	}
	out, err := json.Marshal(Value(v))
	if err != nil {
		return []byte(Mask)
	}
	return out
}

// Value masks secret fields at any depth of a decoded JSON value (what encoding/json decodes
// into an any: maps, slices, strings, numbers), as JSON does for its encoding: a value under a
// secret name that is not an object becomes Mask, and every string has its JWS shapes masked.
// Maps and slices are changed in place; the masked value is returned.
func Value(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if IsSecretName(k) {
				if _, isObj := e.(map[string]any); !isObj {
					t[k] = Mask
					continue
				}
			}
			t[k] = Value(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = Value(e)
		}
		return t
	case string:
		return String(t)
	default:
		return v
	}
}

// Secret is a string that never prints: use it for values that must pass through code that
// might log them.
type Secret string

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(Mask) }

// String implements fmt.Stringer.
func (Secret) String() string { return Mask }

// GoString implements fmt.GoStringer.
func (Secret) GoString() string { return Mask }

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that masks attributes with secret keys, and
// in string and error attributes the values of secret `name=value` / `"name": "value"` pairs
// and JWT-shaped strings (Text).
func ReplaceAttr(groups []string, a slog.Attr) slog.Attr {
	if IsSecretName(a.Key) {
		return slog.String(a.Key, Mask)
	}
	switch a.Value.Kind() {
	case slog.KindString:
		s := a.Value.String()
		if m := Text(s); m != s {
			return slog.String(a.Key, m)
		}
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case http.Header:
			return slog.Any(a.Key, Header(v))
		case *url.URL:
			return slog.String(a.Key, URL(v))
		case error:
			return slog.String(a.Key, Text(v.Error()))
		}
	}
	return a
}
