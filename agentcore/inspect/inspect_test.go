package inspect_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// signedExchanges are a signed request with an access token, and a token request with a
// client assertion and a refresh token, as Poppydesk sends them.
type signedExchanges struct {
	req, tokReq *http.Request
	body        string // the token request's form
	assertion   string
	token       string
	sess        *session.Session
}

func newSignedExchanges(t testing.TB) signedExchanges {
	t.Helper()
	ctx := context.Background()
	now := func() time.Time { return time.Unix(1790900000, 0) }
	secrets := store.NewSecrets(store.NewMemoryKV())
	agent, err := identity.New(identity.Config{ClientID: "https://agent.localhost:8444/agent.json"}, identity.NewLocalOperator(secrets, now), now)
	if err != nil {
		t.Fatal(err)
	}
	m, err := session.NewManager(session.Config{Secrets: secrets, Delegator: agent, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := m.Open(ctx, "https://auth.shop.localhost:8443", session.Options{Version: "0.4"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "https://shop.localhost:8443/api/orders?x=1", nil)
	const token = "tok_SECRET_value_1234567890"
	if err := sess.SignRequest(ctx, req, token); err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	assertion, err := agent.ClientAssertion(ctx, "https://auth.shop.localhost:8443")
	if err != nil {
		t.Fatal(err)
	}
	tokReq, _ := http.NewRequest(http.MethodPost, "https://auth.shop.localhost:8443/token", nil)
	tokReq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	body := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt_SECRET"}, "client_assertion": {assertion}}.Encode()

	return signedExchanges{req: req, tokReq: tokReq, body: body, assertion: assertion, token: token, sess: sess}
}

// TestDecodeSignedRequest signs a request as the engine does (a real Session JWT with its
// delegation, a client assertion in a form body) and checks what Decode keeps: the claims a
// developer needs, the User ID hidden, no signature and no compact JWT anywhere.
func TestDecodeSignedRequest(t *testing.T) {
	ctx := context.Background()
	x := newSignedExchanges(t)
	req, tokReq, body, assertion, sess, token := x.req, x.tokReq, x.body, x.assertion, x.sess, x.token
	cctx := inspect.WithCause(ctx, inspect.Cause{Kind: inspect.CauseModel, Name: "call_api_operation"})
	d := inspect.Decode(cctx, req, nil, http.Header{"Deprecation": {"@1790000000"}}, nil).(*inspect.Details)
	d2 := inspect.Decode(ctx, tokReq, []byte(body), http.Header{"Content-Type": {"application/json"}},
		[]byte(`{"access_token":"`+assertion+`","token_type":"Bearer"}`)).(*inspect.Details)

	if d.Cause == nil || d.Cause.Name != "call_api_operation" {
		t.Errorf("cause = %+v", d.Cause)
	}
	if d.SID != sess.SID {
		t.Errorf("sid = %q, want %q", d.SID, sess.SID)
	}
	byWhere := map[string]inspect.Token{}
	for _, tk := range append(d.Tokens, d2.Tokens...) {
		byWhere[strings.Fields(tk.Where)[0]+" "+strings.Fields(tk.Where)[1]] = tk
	}
	sj := byWhere["Session JWT"]
	for _, c := range []string{"iss", "aud", "sid", "htm", "htu", "iat", "jti", "ath"} {
		if _, ok := sj.Claims[c]; !ok {
			t.Errorf("Session JWT claim %s missing: %v", c, sj.Claims)
		}
	}
	if sj.Claims["sub"] != inspect.Hidden {
		t.Errorf("sub = %v, want hidden", sj.Claims["sub"])
	}
	if dl := byWhere["delegation (poppy_dlg)"]; dl.Header["typ"] != "poppy-delegation+jwt" || dl.Claims["cnf"] == nil {
		t.Errorf("delegation = %+v", dl)
	}
	if ca := byWhere["client assertion"]; ca.Claims["aud"] != "https://auth.shop.localhost:8443" {
		t.Errorf("client assertion = %+v", ca)
	}
	if at := byWhere["access token"]; !strings.Contains(at.Note, "opaque") {
		t.Errorf("access token = %+v", at)
	}
	if len(d.Findings) != 1 || d.Findings[0].Rule != inspect.RuleVersionDeprecation || d.Findings[0].Section != "spec 3.4" {
		t.Errorf("findings = %+v", d.Findings)
	}
	all := string(d.Marshal()) + string(d2.Marshal())
	for _, secret := range []string{token, "rt_SECRET", sess.UserID(), req.Header.Get("Poppy-Session"), assertion, strings.Split(assertion, ".")[2]} {
		if strings.Contains(all, secret) {
			t.Errorf("a secret is in the details: %.20s…", secret)
		}
	}
	// Control: the details do hold what was decoded.
	if !strings.Contains(all, sess.SID) {
		t.Error("control: the sid is not in the details")
	}
	var back inspect.Details
	if err := json.Unmarshal(d.Marshal(), &back); err != nil || len(back.Tokens) != len(d.Tokens) {
		t.Errorf("round trip: %v", err)
	}
}

func TestUndeclaredOperation(t *testing.T) {
	tests := []struct {
		name, ext string
		want      int
	}{
		{"declared", `"operations";v="2"`, 0},
		{"undeclared", ``, 1},
		{"other version", `"operations";v="1"`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "https://shop.localhost/api/x", nil)
			req.Header.Set("Poppy-Session", "x")
			if tt.ext != "" {
				req.Header.Set("Poppy-Extensions", tt.ext)
			}
			got := inspect.ExchangeFindings(req, http.Header{}, []byte(`{"error":"approval_required","operation":{"id":"op"}}`))
			if len(got) != tt.want {
				t.Fatalf("findings = %+v", got)
			}
			if tt.want == 1 && got[0].Section != "Operations 2" {
				t.Errorf("section = %s", got[0].Section)
			}
		})
	}
}

func TestRulesCatalog(t *testing.T) {
	for _, r := range inspect.Rules() {
		if r.Section == "" || r.Expected == "" || r.Fix == "" || r.Title == "" {
			t.Errorf("rule %s is incomplete: %+v", r.ID, r)
		}
		switch r.Level {
		case inspect.MUST, inspect.SHOULD, inspect.NOTE:
		default:
			t.Errorf("rule %s has level %q", r.ID, r.Level)
		}
	}
}

// TestJoinPageFindings: the browser-session page's headers (spec 6 step 1): the example's three
// headers, and what else meets each requirement, pass; each one missing or weaker is named.
func TestJoinPageFindings(t *testing.T) {
	good := func() http.Header {
		return http.Header{"Cache-Control": {"no-store"}, "Content-Security-Policy": {"frame-ancestors 'none'"}, "Cross-Origin-Opener-Policy": {"same-origin"}}
	}
	tests := []struct {
		name string
		edit func(h http.Header)
		want []string // words of the finding; none: no finding
	}{
		{"the example's headers", func(http.Header) {}, nil},
		{"other values that meet the rules", func(h http.Header) {
			h.Set("Cache-Control", "private, No-Store")
			h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'self'")
			h.Set("Cross-Origin-Opener-Policy", "noopener-allow-popups")
		}, nil},
		{"X-Frame-Options instead of frame-ancestors", func(h http.Header) {
			h.Del("Content-Security-Policy")
			h.Set("X-Frame-Options", "DENY")
		}, nil},
		{"cacheable", func(h http.Header) { h.Set("Cache-Control", "max-age=60") }, []string{"without Cache-Control: no-store", "it sent Cache-Control: max-age=60"}},
		{"framable by any page", func(h http.Header) { h.Set("Content-Security-Policy", "frame-ancestors *") }, []string{"frame-ancestors 'none'"}},
		{"no opener policy", func(h http.Header) { h.Del("Cross-Origin-Opener-Policy") }, []string{"Cross-Origin-Opener-Policy: same-origin"}},
		{"no header at all", func(h http.Header) { clear(h) }, []string{"no-store", "frame-ancestors", "Cross-Origin-Opener-Policy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := good()
			tt.edit(h)
			fs := inspect.JoinPageFindings("https://shop.example/poppy/browser-session", h)
			if tt.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings: %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Rule != inspect.RuleJoinPageHeaders || fs[0].Section != "spec 6" || fs[0].URL == "" {
				t.Fatalf("findings: %+v", fs)
			}
			for _, w := range tt.want {
				if !strings.Contains(fs[0].Seen, w) {
					t.Errorf("%q lacks %q", fs[0].Seen, w)
				}
			}
		})
	}
}

// TestFieldFindings: a conversation answer or a poppy.json without a field it must carry is a
// finding of one exchange (spec 8.5, 8.7, 4.7); whole answers, error answers, streams and
// unsigned requests are not.
func TestFieldFindings(t *testing.T) {
	const goodRead = `{"conversation_id":"c","events":[{"id":"e1","type":"message","message":{"role":"company","author":{"type":"agent"},"text":"hi"}}],"cursor":"e1","has_more":false,"status":"idle","responder":"agent"}`
	tests := []struct {
		name, method, path, ctype, body string
		signed                          bool
		rule, words                     string
	}{
		{"whole read", "GET", "/poppy/conversations/c/events", "application/json", goodRead, true, "", ""},
		{"read without has_more", "GET", "/poppy/conversations/c/events", "application/json", strings.Replace(goodRead, `"has_more":false,`, "", 1), true, inspect.RuleConvFields, "has no has_more"},
		{"Company message without author", "GET", "/poppy/conversations/c/events", "application/json", strings.Replace(goodRead, `"author":{"type":"agent"},`, "", 1), true, inspect.RuleConvFields, `author.type ""`},
		{"start without responder", "POST", "/poppy/conversations", "application/json", `{"conversation_id":"c","status":"working"}`, true, inspect.RuleConvFields, "has no responder"},
		{"an error answer", "POST", "/poppy/conversations", "application/json", `{"error":"conversation_not_found","conversation_id":"c"}`, true, "", ""},
		{"a stream", "GET", "/poppy/conversations/c/events", "text/event-stream", "data: {}\n\n", true, "", ""},
		{"unsigned", "POST", "/poppy/conversations", "application/json", `{"conversation_id":"c"}`, false, "", ""},
		{"whole scope hints", "GET", "/.well-known/poppy.json", "application/json", `{"protocol_version":"0.4","organization":{},"auth":{"scope_hints":{"a":{"changes":"none","personal_data":false}}}}`, false, "", ""},
		{"scope hint without personal_data", "GET", "/.well-known/poppy.json", "application/json", `{"protocol_version":"0.4","organization":{},"auth":{"scope_hints":{"a":{"changes":"none"},"b":{"personal_data":"yes","changes":"none"}}}}`, false, inspect.RuleScopeHints, `"a" has no personal_data (true or false); the scope hint of "b" has no personal_data`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, "https://shop.localhost"+tt.path, nil)
			if tt.signed {
				req.Header.Set("Poppy-Session", "x")
			}
			got := inspect.ExchangeFindings(req, http.Header{"Content-Type": {tt.ctype}}, []byte(tt.body))
			switch {
			case tt.rule == "" && len(got) != 0:
				t.Fatalf("findings = %+v", got)
			case tt.rule == "":
			case len(got) != 1 || got[0].Rule != tt.rule || !strings.Contains(got[0].Seen, tt.words):
				t.Fatalf("findings = %+v, want one of %s saying %q", got, tt.rule, tt.words)
			}
		})
	}
}

// TestPendingDecodesLaterAndShowsNoSecret: what the engine's transport keeps on the request
// path (inspect.Defer) decodes to what Decode gives, and before that prints and logs as nothing
// but its name: no token, assertion, refresh token or signature in any fmt verb or slog output.
func TestPendingDecodesLaterAndShowsNoSecret(t *testing.T) {
	x := newSignedExchanges(t)
	ctx := inspect.WithCause(context.Background(), inspect.Cause{Kind: inspect.CauseModel, Name: "call_api_operation"})
	respHeader := http.Header{"Content-Type": {"application/json"}, "Deprecation": {"@1790000000"}}
	tokenResp := []byte(`{"access_token":"` + x.assertion + `","token_type":"Bearer"}`)
	// An operation answered to a request that declares the extension (no finding) and to one
	// that does not (a finding): Poppy-Extensions is read too.
	declared := x.req.Clone(context.Background())
	declared.Header.Set("Poppy-Extensions", `"operations";v="2"`)
	opResp := []byte(`{"error":"approval_required","operation":{"operation_id":"op1"}}`)
	for _, tc := range []struct {
		name     string
		req      *http.Request
		body     []byte
		respBody []byte
	}{
		{"signed request", x.req, nil, tokenResp},
		{"token request", x.tokReq, []byte(x.body), tokenResp},
		{"operation, extension declared", declared, nil, opResp},
		{"operation, extension not declared", x.req, nil, opResp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			respBody := tc.respBody
			p := inspect.Defer(ctx, tc.req, tc.body, respHeader, respBody).(*inspect.Pending)
			var logged bytes.Buffer
			slog.New(slog.NewJSONHandler(&logged, nil)).Info("exchange", "inspected", p, "any", any(p))
			shown := fmt.Sprintf("%v %+v %#v %s", p, p, p, p) + logged.String()
			secrets := []string{x.token, "rt_SECRET", x.assertion, tc.req.Header.Get("Poppy-Session")}
			for _, part := range strings.Split(tc.req.Header.Get("Poppy-Session"), ".") {
				secrets = append(secrets, part)
			}
			for _, s := range secrets {
				if s != "" && strings.Contains(shown, s) {
					t.Fatalf("a pending exchange shows a secret (%.12s...): %s", s, shown)
				}
			}
			want, _ := json.Marshal(inspect.Decode(ctx, tc.req, tc.body, respHeader, respBody))
			got, _ := json.Marshal(p.Details())
			if string(got) != string(want) {
				t.Fatalf("decoded later:\n%s\nwant what Decode gives:\n%s", got, want)
			}
		})
	}
}

// plainJSON is d as encoding/json encodes its fields by their tags alone, the reference for the
// stored form that Details.Marshal and Token.MarshalJSON write by hand.
func plainJSON(t *testing.T, d *inspect.Details) []byte {
	t.Helper()
	type token struct {
		Where  string         `json:"where"`
		Header map[string]any `json:"header,omitempty"`
		Claims map[string]any `json:"claims,omitempty"`
		Note   string         `json:"note,omitempty"`
	}
	type details struct {
		Cause    *inspect.Cause    `json:"cause,omitempty"`
		SID      string            `json:"sid,omitempty"`
		Tokens   []token           `json:"tokens,omitempty"`
		Findings []inspect.Finding `json:"findings,omitempty"`
	}
	p := details{Cause: d.Cause, SID: d.SID, Findings: d.Findings}
	for _, tk := range d.Tokens {
		p.Tokens = append(p.Tokens, token{Where: tk.Where, Header: tk.Header, Claims: tk.Claims, Note: tk.Note})
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDetailsMarshal: the hand-written encoding of Details and of a Token is what encoding/json
// gives for their fields, for every field set or left empty and strings that JSON escapes.
func TestDetailsMarshal(t *testing.T) {
	for _, d := range []*inspect.Details{
		{SID: "s<1>&\"q\"\u2028"},
		{Cause: &inspect.Cause{Kind: inspect.CauseModel, Name: "call_api_operation"}},
		{Tokens: []inspect.Token{{Where: "opaque <x>", Note: "an opaque token of 5 characters"}, {Where: "empty maps", Header: map[string]any{}}}},
		{Tokens: []inspect.Token{{Where: inspect.TokenAccess, Header: map[string]any{"alg": "ES256"}, Claims: map[string]any{"z": 1.5, "a": []any{"x", nil}, "m": map[string]any{"k": "<&>"}}}}},
		{Findings: []inspect.Finding{{Rule: "r", Title: "<t>", Seen: "s"}}, SID: "s"},
	} {
		want := plainJSON(t, d)
		if got := d.Marshal(); string(got) != string(want) {
			t.Errorf("Marshal:\n%s\nencoding/json gives:\n%s", got, want)
		}
		if got, err := json.Marshal(d); err != nil || string(got) != string(want) {
			t.Errorf("json.Marshal: %s (%v)\nencoding/json gives for the fields:\n%s", got, err, want)
		}
	}
	if got := (&inspect.Details{}).Marshal(); got != nil {
		t.Errorf("empty Details marshal to %s, want nil", got)
	}
}

// TestDecoderKeepsWhatRepeatsAndGivesWhatDecodeGives: a Decoder that sees the same Session, DPoP
// key and tokens again and again (its cache warm) gives, every time, exactly what Decode gives
// for each exchange, whatever order they come in; and its cache stays within its bound when
// every request carries a different token.
func TestDecoderKeepsWhatRepeatsAndGivesWhatDecodeGives(t *testing.T) {
	x := newSignedExchanges(t)
	ctx := inspect.WithCause(context.Background(), inspect.Cause{Kind: inspect.CauseModel, Name: "call_api_operation"})
	respHeader := http.Header{"Content-Type": {"application/json"}, "Deprecation": {"@1790000000"}} // a finding each
	// An access token that is a JWT with a sub (hidden when shown) and a DPoP proof header.
	seg := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	jwtAccess := seg(map[string]any{"alg": "ES256", "typ": "at+jwt"}) + "." +
		seg(map[string]any{"sub": "user-SECRET-id", "scope": "orders:read", "cnf": map[string]any{"jkt": "abc"}}) + ".c2ln"
	withAccess := x.req.Clone(context.Background())
	withAccess.Header.Set("Authorization", "DPoP "+jwtAccess)
	withAccess.Header.Set("DPoP", seg(map[string]any{"typ": "dpop+jwt", "alg": "ES256",
		"jwk": map[string]any{"kty": "EC", "crv": "P-256", "x": "eA", "y": "eQ", "d": "PRIVATE"}})+"."+
		seg(map[string]any{"htm": "POST", "jti": "j1"})+".c2ln")
	// A token sent both as a Session's delegation (its claims shown whole) and as an access
	// token (its sub hidden): a Decoder keeps its claims once and shows each as Decode does.
	both := seg(map[string]any{"alg": "ES256"}) + "." + seg(map[string]any{"sub": "shown-as-delegation", "scope": "orders:read"}) + ".c2ln"
	dlgBoth, _ := http.NewRequest(http.MethodGet, "https://shop.localhost:8443/api/orders", nil)
	dlgBoth.Header.Set("Poppy-Session", seg(map[string]any{"alg": "ES256", "typ": "poppy-session+jwt", "poppy_dlg": both})+"."+
		seg(map[string]any{"sid": "s1", "sub": "user-SECRET-id"})+".c2ln")
	accessBoth, _ := http.NewRequest(http.MethodGet, "https://shop.localhost:8443/api/orders", nil)
	accessBoth.Header.Set("Authorization", "Bearer "+both)
	type exchange struct {
		req  *http.Request
		body []byte
		resp []byte
	}
	exchanges := []exchange{
		{x.req, nil, nil},
		{withAccess, nil, nil},
		{x.tokReq, []byte(x.body), []byte(`{"access_token":"` + jwtAccess + `","token_type":"DPoP"}`)},
		{dlgBoth, nil, nil},
		{accessBoth, nil, nil},
		{dlgBoth, nil, nil},
	}
	// One Decoder gives Details, keeping what repeats.
	var dec inspect.Decoder
	for round := 0; round < 3; round++ {
		for i, ex := range exchanges {
			fresh, _ := inspect.Decode(ctx, ex.req, ex.body, respHeader, ex.resp).(*inspect.Details)
			want := plainJSON(t, fresh)
			d := dec.Details(inspect.Defer(ctx, ex.req, ex.body, respHeader, ex.resp).(*inspect.Pending))
			details, _ := json.Marshal(d)
			for _, got := range []struct {
				how  string
				json string
			}{{"Details", string(details)}, {"Details.Marshal", string(d.Marshal())}, {"Decode's Marshal", string(fresh.Marshal())}} {
				if got.json != string(want) {
					t.Fatalf("round %d, exchange %d decoded by a Decoder's %s:\n%s\nwant what Decode gives:\n%s", round, i, got.how, got.json, want)
				}
				if strings.Contains(got.json, "user-SECRET-id") || strings.Contains(got.json, "PRIVATE") {
					t.Fatalf("round %d, exchange %d shows a hidden claim or a private key (%s): %s", round, i, got.how, got.json)
				}
			}
		}
	}

	for i := 0; i < 200; i++ {
		tok := seg(map[string]any{"alg": "ES256"}) + "." + seg(map[string]any{"n": i}) + ".c2ln"
		req, _ := http.NewRequest(http.MethodGet, "https://shop.localhost:8443/api/orders", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		dec.Details(inspect.Defer(ctx, req, nil, respHeader, nil).(*inspect.Pending))
		if n := dec.Cached(); n > 64 {
			t.Fatalf("after %d different tokens the Decoder holds %d segments, more than its bound of 64", i+1, n)
		}
	}
}
