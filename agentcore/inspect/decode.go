package inspect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
)

// Hidden replaces a claim whose value is secret (a User ID or an Agent ID, spec 5.1).
const Hidden = "(hidden)"

// Where a decoded token was carried.
const (
	TokenSession     = "Session JWT (Poppy-Session)"
	TokenDelegation  = "delegation (poppy_dlg)"
	TokenAssertion   = "client assertion (client_assertion)"
	TokenDPoP        = "DPoP proof (DPoP)"
	TokenAccess      = "access token (Authorization)"
	TokenIssued      = "issued access token (access_token)"
	TokenOpaqueNotes = "opaque"
)

// Token is one decoded JWT: its header and claims, never its signature or its compact form.
// An opaque (non-JWT) token has only Note.
type Token struct {
	Where  string         `json:"where"`
	Header map[string]any `json:"header,omitempty"`
	Claims map[string]any `json:"claims,omitempty"`
	Note   string         `json:"note,omitempty"`

	// header and claims are the Decoder's kept segments behind Header and Claims (nil when
	// decoded afresh).
	header, claims *segment
}

// MarshalJSON encodes t as its fields' tags say (appendJSON).
func (t Token) MarshalJSON() ([]byte, error) { return t.appendJSON(make([]byte, 0, 512)) }

// appendJSON appends t encoded as its fields' tags say. A segment the Decoder keeps is encoded
// once and its JSON reused: most requests repeat a Session JWT's header, a delegation and an
// access token, and encoding their maps again on every request (sorted keys, reflection) would
// be most of what encoding the details costs. Like the rest of a Decoder, the kept encoding is
// for the Decoder's one goroutine.
func (t Token) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"where":`...)
	b = appendString(b, t.Where)
	for _, f := range []struct {
		name string
		m    map[string]any
		kept *segment
	}{{`,"header":`, t.Header, t.header}, {`,"claims":`, t.Claims, t.claims}} {
		if len(f.m) == 0 {
			continue
		}
		js, err := f.kept.json(f.m)
		if err != nil {
			return nil, err
		}
		b = append(append(b, f.name...), js...)
	}
	if t.Note != "" {
		b = appendString(append(b, `,"note":`...), t.Note)
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	js, err := json.Marshal(s)
	if err != nil { // a Go string always encodes
		return append(b, `""`...)
	}
	return append(b, js...)
}

// Details is what the Inspector keeps of one exchange beyond its redacted headers and bodies.
type Details struct {
	Cause    *Cause    `json:"cause,omitempty"`
	SID      string    `json:"sid,omitempty"`
	Tokens   []Token   `json:"tokens,omitempty"`
	Findings []Finding `json:"findings,omitempty"`
}

// Empty reports whether d holds nothing.
func (d *Details) Empty() bool {
	return d == nil || d.Cause == nil && d.SID == "" && len(d.Tokens) == 0 && len(d.Findings) == 0
}

// Marshal is d as JSON (nil when empty), as json.Marshal encodes it. It appends the tokens'
// encodings itself (Token.appendJSON) rather than through json.Marshal, which would check and
// copy each token's encoding again.
func (d *Details) Marshal() json.RawMessage {
	if d.Empty() {
		return nil
	}
	b := make([]byte, 0, 1024)
	field := func(name string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, name...)
	}
	b = append(b, '{')
	if d.Cause != nil {
		js, err := json.Marshal(d.Cause)
		if err != nil {
			return nil
		}
		field(`"cause":`)
		b = append(b, js...)
	}
	if d.SID != "" {
		field(`"sid":`)
		b = appendString(b, d.SID)
	}
	if len(d.Tokens) > 0 {
		field(`"tokens":[`)
		for i, t := range d.Tokens {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = t.appendJSON(b); err != nil {
				return nil
			}
		}
		b = append(b, ']')
	}
	if len(d.Findings) > 0 {
		js, err := json.Marshal(d.Findings)
		if err != nil {
			return nil
		}
		field(`"findings":`)
		b = append(b, js...)
	}
	return append(b, '}')
}

// ParseDetails reads stored Details (an empty value gives empty Details).
func ParseDetails(raw json.RawMessage) (*Details, error) {
	d := &Details{}
	if len(raw) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(raw, d); err != nil {
		return nil, fmt.Errorf("inspect: the stored details do not parse: %w", err)
	}
	return d, nil
}

// maxJWT bounds what is decoded: a larger value is described, not parsed.
const maxJWT = 16 << 10

// Decode is transport.Config.Inspect: the cause from ctx, and the JWTs the request carried and
// the token response returned, decoded without signatures or secret claims (package doc), and
// the findings visible in this one exchange.
func Decode(ctx context.Context, req *http.Request, reqBody []byte, respHeader http.Header, respBody []byte) any {
	c, ok := CauseOf(ctx)
	if d := decode(nil, c, ok, req, reqBody, respHeader, respBody); d != nil {
		return d
	}
	return nil
}

// decode is Decode with the cause already read from the context (hasCause false: none).
// A nil dec decodes every segment afresh.
func decode(dec *Decoder, cause Cause, hasCause bool, req *http.Request, reqBody []byte, respHeader http.Header, respBody []byte) *Details {
	d := &Details{}
	if hasCause {
		d.Cause = &cause
	}
	if v := req.Header.Get("Poppy-Session"); v != "" {
		if t, ok := dec.decodeJWT(TokenSession, v, false); ok {
			if sid, _ := t.Claims["sid"].(string); sid != "" {
				d.SID = sid
			}
			hideClaims(t.Claims, "sub", "agent_id")
			dlg, _ := t.Header["poppy_dlg"].(string)
			if dlg != "" {
				if t.header != nil {
					t.header = t.header.delegated()
					t.Header = t.header.m
				} else {
					t.Header = delegated(t.Header)
				}
			}
			d.Tokens = append(d.Tokens, t)
			if dlg != "" {
				if dt, ok := dec.decodeJWT(TokenDelegation, dlg, true); ok {
					d.Tokens = append(d.Tokens, dt)
				}
			}
		}
	}
	if v := req.Header.Get("DPoP"); v != "" {
		if t, ok := dec.decodeJWT(TokenDPoP, v, false); ok {
			d.Tokens = append(d.Tokens, t)
		}
	}
	if v := req.Header.Get("Authorization"); v != "" {
		if scheme, tok, ok := strings.Cut(v, " "); ok && (strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "DPoP")) {
			d.Tokens = append(d.Tokens, dec.accessToken(TokenAccess+" "+scheme, tok))
		}
	}
	if isForm(req.Header) && len(reqBody) > 0 {
		if form, err := url.ParseQuery(string(reqBody)); err == nil {
			if a := form.Get("client_assertion"); a != "" {
				if t, ok := dec.decodeJWT(TokenAssertion, a, false); ok {
					d.Tokens = append(d.Tokens, t)
				}
			}
		}
	}
	if isJSON(respHeader) && len(respBody) > 0 && bytes.Contains(respBody, []byte(`"access_token"`)) {
		var tr struct {
			AccessToken string `json:"access_token"`
		}
		if json.Unmarshal(respBody, &tr) == nil && tr.AccessToken != "" {
			d.Tokens = append(d.Tokens, dec.accessToken(TokenIssued, tr.AccessToken))
		}
	}
	d.Findings = append(d.Findings, ExchangeFindings(req, respHeader, respBody)...)
	if d.Empty() {
		return nil
	}
	return d
}

// delegated is a Session JWT's header as shown: a copy with its poppy_dlg replaced by a note
// (the delegation is decoded as a token of its own).
func delegated(h map[string]any) map[string]any {
	h = maps.Clone(h) // a header decoded once may be shared (Decoder)
	h["poppy_dlg"] = "(decoded below)"
	return h
}

func (dec *Decoder) accessToken(where, tok string) Token {
	if t, ok := dec.decodeJWT(where, tok, true); ok {
		if t.claims != nil {
			t.claims = t.claims.subHidden() // kept claims are shared: hidden in a copy, kept too
			t.Claims = t.claims.m
		} else {
			hideClaims(t.Claims, "sub")
		}
		return t
	}
	return Token{Where: where, Note: fmt.Sprintf("an opaque token of %d characters (its value is never shown)", len(tok))}
}

func isForm(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "application/x-www-form-urlencoded")
}

func isJSON(h http.Header) bool {
	ct := strings.ToLower(h.Get("Content-Type"))
	return strings.HasPrefix(ct, "application/json") || strings.Contains(ct, "+json")
}

// decodeJWT decodes a compact JWS's header and payload (JSON objects) and drops its signature.
// It verifies nothing: what it shows is what was sent. It is hand-written because a verifying
// parser (jwx) needs the key, and the Inspector shows also what would not verify. A header, and
// with sameClaims the claims (a token sent unchanged on many requests: a delegation, an access
// token), may come from dec's cache (with Token.header and Token.claims set): the caller never
// changes such a map, it shows a copy (segment.delegated, segment.subHidden).
func (dec *Decoder) decodeJWT(where, s string, sameClaims bool) (Token, bool) {
	s = strings.TrimSpace(s)
	if len(s) > maxJWT {
		return Token{Where: where, Note: fmt.Sprintf("%d characters, too long to decode", len(s))}, true
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Token{}, false
	}
	hdr, hs, ok := dec.segment(parts[0], true)
	if !ok {
		return Token{}, false
	}
	claims, cs, ok := dec.segment(parts[1], sameClaims)
	if !ok {
		return Token{}, false
	}
	return Token{Where: where, Header: hdr, Claims: claims, header: hs, claims: cs}, true
}

// segment is one decoded and scrubbed segment, from dec's cache when keep and already there
// (and then kept in it, returned as kept too; nil when not kept).
func (dec *Decoder) segment(seg string, keep bool) (map[string]any, *segment, bool) {
	if dec == nil || !keep {
		var m map[string]any
		if !decodeSegment(seg, &m) {
			return nil, nil, false
		}
		scrub(m)
		return m, nil, true
	}
	key := sha256.Sum256([]byte(seg))
	if s, ok := dec.segs[key]; ok {
		return s.m, s, true
	}
	var m map[string]any
	if !decodeSegment(seg, &m) {
		return nil, nil, false
	}
	scrub(m)
	if len(dec.segs) >= decoderCache {
		clear(dec.segs)
	}
	if dec.segs == nil {
		dec.segs = make(map[[32]byte]*segment, decoderCache)
	}
	s := &segment{m: m}
	dec.segs[key] = s
	return m, s, true
}

// segment is a decoded segment a Decoder keeps. Its m never changes once kept: a token that
// shows it changed (a Session JWT's header, an access token's claims) shows a copy, kept with it.
type segment struct {
	m      map[string]any
	js     []byte   // m encoded, once (json)
	dlg    *segment // a Session JWT's header as shown (delegated), made once
	hidden *segment // as an access token's claims: without sub, made once (s itself without sub)
}

// json is m encoded as JSON: s's kept encoding of its own m, or m encoded now when s is nil (a
// segment decoded afresh).
func (s *segment) json(m map[string]any) ([]byte, error) {
	if s == nil {
		return json.Marshal(m)
	}
	if s.js == nil {
		js, err := json.Marshal(s.m)
		if err != nil {
			return nil, err
		}
		s.js = js
	}
	return s.js, nil
}

// subHidden is s as an access token's claims show it: sub replaced by Hidden.
func (s *segment) subHidden() *segment {
	if s.hidden == nil {
		s.hidden = s
		if _, ok := s.m["sub"]; ok {
			m := maps.Clone(s.m)
			hideClaims(m, "sub")
			s.hidden = &segment{m: m}
		}
	}
	return s.hidden
}

// delegated is the kept form of delegated(s.m).
func (s *segment) delegated() *segment {
	if s.dlg == nil {
		s.dlg = &segment{m: delegated(s.m)}
	}
	return s.dlg
}

func decodeSegment(seg string, v *map[string]any) bool {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
	if err != nil {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v) == nil && *v != nil
}

// privateJWK are the members of a JWK that are private (RFC 7518 §6).
var privateJWK = []string{"d", "p", "q", "dp", "dq", "qi", "k", "oth"}

// scrub removes private JWK members anywhere in m, and replaces nested JWT-shaped strings
// (other than poppy_dlg, which Decode handles) by a note.
func scrub(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			if _, isKey := x["kty"]; isKey {
				for _, p := range privateJWK {
					if _, ok := x[p]; ok {
						x[p] = Hidden
					}
				}
			}
			scrub(x)
		case string:
			if k != "poppy_dlg" && looksLikeJWT(x) {
				m[k] = "(a JWT, not shown)"
			}
		}
	}
}

func looksLikeJWT(s string) bool {
	return strings.Count(s, ".") == 2 && strings.HasPrefix(s, "eyJ") && len(s) > 20
}

func hideClaims(m map[string]any, names ...string) {
	for _, n := range names {
		if _, ok := m[n]; ok {
			m[n] = Hidden
		}
	}
}
