package refcompany_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

type asFixture struct {
	s      *refcompany.Server
	c      *http.Client
	agent  *refcompany.TestAgent
	agentT time.Time // the agent's clock offset base (zero: real time)
	offset time.Duration
}

func newAS(t *testing.T) *asFixture {
	t.Helper()
	s, c := start(t, refcompany.Options{})
	f := &asFixture{s: s, c: c}
	a, err := s.NewTestAgent(context.Background(), func() time.Time { return time.Now().Add(f.offset) })
	if err != nil {
		t.Fatal(err)
	}
	f.agent = a
	return f
}

const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

func challenge(v string) string {
	s := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

func (f *asFixture) authURL(mod func(url.Values)) string {
	q := url.Values{"response_type": {"code"}, "client_id": {f.agent.ClientID}, "redirect_uri": {"http://127.0.0.1:49152/callback"},
		"scope": {"orders:read orders:write"}, "state": {"st"}, "code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}}
	if mod != nil {
		mod(q)
	}
	return f.s.Issuer() + "/oauth/authorize?" + q.Encode()
}

func (f *asFixture) get(t *testing.T, raw string) (*http.Response, string) {
	t.Helper()
	resp, err := f.c.Get(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

var reqIDRE = regexp.MustCompile(`name="request" value="([^"]+)"`)

// code runs the consent page and returns the code from the redirect.
func (f *asFixture) code(t *testing.T) string {
	t.Helper()
	_, page := f.get(t, f.authURL(nil))
	m := reqIDRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("consent page: %s", page)
	}
	resp, err := f.c.PostForm(f.s.Issuer()+"/oauth/authorize", url.Values{"request": {m[1]}, "decision": {"approve"}, "scope": {"orders:read"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc.Query().Get("iss") != f.s.Issuer() || loc.Query().Get("state") != "st" || loc.Query().Get("code") == "" {
		t.Fatalf("redirect back %s", loc)
	}
	return loc.Query().Get("code")
}

func (f *asFixture) assertion(t *testing.T, aud string) string {
	t.Helper()
	a, err := f.agent.Identity.ClientAssertion(context.Background(), aud)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (f *asFixture) post(t *testing.T, path string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := f.c.PostForm(f.s.Issuer()+path, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestAuthorizationEndpoint(t *testing.T) {
	f := newAS(t)
	tests := []struct {
		name      string
		mod       func(url.Values)
		status    int    // 200 consent page, 400 error page, 303 redirect with error
		wantError string // error in the redirect
	}{
		{"valid, any loopback port", nil, 200, ""},
		{"another loopback port", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:1234/callback") }, 200, ""},
		{"other loopback path", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:1234/other") }, 400, ""},
		{"https redirect not registered", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb") }, 400, ""},
		{"localhost is not the registered literal", func(q url.Values) { q.Set("redirect_uri", "http://localhost:1234/callback") }, 400, ""},
		{"client_id without metadata", func(q url.Values) { q.Set("client_id", f.s.URL(refcompany.AgentHost, "/nobody.json")) }, 400, ""},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge") }, 303, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, 303, "invalid_request"},
		{"no scope", func(q url.Values) { q.Del("scope") }, 303, "invalid_scope"},
		{"unknown scope", func(q url.Values) { q.Set("scope", "orders:read admin") }, 303, "invalid_scope"},
		{"unknown resource", func(q url.Values) { q.Set("resource", "https://elsewhere.example") }, 303, "invalid_target"},
		{"token response type", func(q url.Values) { q.Set("response_type", "token") }, 303, "unsupported_response_type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, page := f.get(t, f.authURL(tc.mod))
			if resp.StatusCode != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tc.status, page)
			}
			switch tc.status {
			case 200:
				if resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
					t.Errorf("headers %v", resp.Header)
				}
				for _, want := range []string{`value="orders:read" id="scope-orders:read" checked`, `value="orders:write" id="scope-orders:write" checked`, `id="approve"`, `id="deny"`} {
					if !strings.Contains(page, want) {
						t.Errorf("consent page lacks %s", want)
					}
				}
			case 303:
				loc, _ := url.Parse(resp.Header.Get("Location"))
				if loc.Query().Get("error") != tc.wantError || loc.Query().Get("iss") != f.s.Issuer() || loc.Query().Get("state") != "st" {
					t.Errorf("redirect %s, want error=%s with iss and state", loc, tc.wantError)
				}
			}
		})
	}
}

func TestTokenEndpointChecks(t *testing.T) {
	f := newAS(t)
	good := func(code string) url.Values {
		return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {"http://127.0.0.1:49152/callback"},
			"code_verifier": {verifier}, "client_id": {f.agent.ClientID},
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {f.assertion(t, f.s.Issuer())}}
	}
	tests := []struct {
		name   string
		form   func(t *testing.T) url.Values
		status int
		err    string
	}{
		{"valid", func(t *testing.T) url.Values { return good(f.code(t)) }, 200, ""},
		{"no client assertion", func(t *testing.T) url.Values {
			v := good(f.code(t))
			v.Del("client_assertion")
			return v
		}, 401, "invalid_client"},
		{"aud is the token endpoint", func(t *testing.T) url.Values {
			v := good(f.code(t))
			v.Set("client_assertion", f.assertion(t, f.s.Issuer()+"/oauth/token"))
			return v
		}, 401, "invalid_client"},
		{"expired assertion", func(t *testing.T) url.Values {
			f.offset = -10 * time.Minute
			defer func() { f.offset = 0 }()
			return good(f.code(t))
		}, 401, "invalid_client"},
		{"wrong verifier", func(t *testing.T) url.Values {
			v := good(f.code(t))
			v.Set("code_verifier", strings.Repeat("x", 43))
			return v
		}, 400, "invalid_grant"},
		{"redirect_uri differs", func(t *testing.T) url.Values {
			v := good(f.code(t))
			v.Set("redirect_uri", "http://127.0.0.1:1/callback")
			return v
		}, 400, "invalid_grant"},
		{"unknown resource", func(t *testing.T) url.Values {
			v := good(f.code(t))
			v.Set("resource", "https://elsewhere.example")
			return v
		}, 400, "invalid_target"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.post(t, "/oauth/token", tc.form(t))
			if status != tc.status || tc.err != "" && body["error"] != tc.err {
				t.Fatalf("HTTP %d %v, want %d %s", status, body, tc.status, tc.err)
			}
			if tc.status == 200 {
				if body["refresh_token"] == "" || body["token_type"] != "Bearer" || body["scope"] != "orders:read" {
					t.Errorf("token response %v", body)
				}
			}
		})
	}
	t.Run("code and assertion are single use", func(t *testing.T) {
		v := good(f.code(t))
		if status, _ := f.post(t, "/oauth/token", v); status != 200 {
			t.Fatal("first use failed")
		}
		if _, body := f.post(t, "/oauth/token", v); body["error"] != "invalid_client" {
			t.Errorf("replayed assertion: %v", body)
		}
		v.Set("client_assertion", f.assertion(t, f.s.Issuer()))
		if _, body := f.post(t, "/oauth/token", v); body["error"] != "invalid_grant" {
			t.Errorf("reused code: %v", body)
		}
	})
}

func TestDeviceVerificationPageDoesNotApproveOnOpen(t *testing.T) {
	f := newAS(t)
	auth := func() url.Values {
		return url.Values{"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {f.assertion(t, f.s.Issuer())}}
	}
	form := auth()
	form.Set("scope", "orders:read")
	status, dr := f.post(t, "/oauth/device", form)
	if status != 200 {
		t.Fatalf("device authorization: %d %v", status, dr)
	}
	resp, page := f.get(t, dr["verification_uri_complete"].(string))
	if resp.StatusCode != 200 || !strings.Contains(page, dr["user_code"].(string)) {
		t.Fatalf("verification page %d: %s", resp.StatusCode, page)
	}
	poll := auth()
	poll.Set("grant_type", "urn:ietf:params:oauth:grant-type:device_code")
	poll.Set("device_code", dr["device_code"].(string))
	if _, body := f.post(t, "/oauth/token", poll); body["error"] != "authorization_pending" {
		t.Errorf("after opening the link: %v, want authorization_pending", body)
	}
	poll.Set("client_assertion", f.assertion(t, f.s.Issuer()))
	if _, body := f.post(t, "/oauth/token", poll); body["error"] != "slow_down" {
		t.Errorf("polling faster than interval: %v, want slow_down", body)
	}
	revoke := auth()
	revoke.Set("token", "unknown")
	if status, _ := f.post(t, "/oauth/revoke", revoke); status != 200 {
		t.Errorf("revoking an unknown token: HTTP %d, want 200 (RFC 7009 §2.2)", status)
	}
}
