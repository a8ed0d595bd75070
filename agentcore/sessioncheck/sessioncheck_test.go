package sessioncheck_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/sessioncheck"
)

// TestVerifyChecks covers every check of spec 5.2 and 5.3, positively and negatively, over
// real HTTPS: each case tampers with one part of an otherwise valid request.
func TestVerifyChecks(t *testing.T) {
	f := newFixture(t)
	const token = "at_9f8e7d6c5b4a"
	tests := []struct {
		name     string
		method   string
		path     string // request path
		token    string // access token sent
		tokenCID string // client_id the token was issued to ("" = the agent's)
		mutate   func(s *spec)
		headers  func(h http.Header, jwt string)
		wantCode string // "" = accepted
		wantDesc string
	}{
		{name: "valid signed out", wantCode: ""},
		{name: "valid with access token", token: token},
		{name: "valid POST", method: "POST"},
		{name: "htu with query and fragment ignored", path: "/api/orders?x=1", mutate: func(s *spec) { s.claims["htu"] = s.claims["htu"].(string) + "?y=2#frag" }},
		{name: "htu scheme and host case-insensitive", mutate: func(s *spec) {
			s.claims["htu"] = strings.Replace(strings.Replace(s.claims["htu"].(string), "https://", "HTTPS://", 1), "127.0.0.1", "127.0.0.1", 1)
		}},
		{name: "htu percent-encoding normalized", path: "/api/a%7Eb", mutate: func(s *spec) { s.claims["htu"] = strings.Replace(s.claims["htu"].(string), "a%7Eb", "a~b", 1) }},
		{name: "agent_id accepted", mutate: func(s *spec) { s.claims["agent_id"] = "agt_1" }},
		{name: "iat at edge of window", mutate: func(s *spec) { s.claims["iat"] = s.claims["iat"].(int64) - 60 }},

		{name: "no Session header", headers: func(h http.Header, _ string) { h.Del("Poppy-Session") }, wantCode: "invalid_session", wantDesc: "no Poppy-Session"},
		{name: "two Session headers", headers: func(h http.Header, jwt string) { h.Add("Poppy-Session", jwt) }, wantCode: "invalid_session", wantDesc: "more than one"},
		{name: "garbage header", headers: func(h http.Header, _ string) { h.Set("Poppy-Session", "not.a-jwt") }, wantCode: "invalid_session", wantDesc: "compact JWT"},
		{name: "no delegation", mutate: func(s *spec) { s.noDlg = true }, wantCode: "invalid_session", wantDesc: "no delegation"},
		{name: "signed directly with root key", mutate: func(s *spec) {
			s.noDlg = true
			// Sign the Session JWT with the jwks_uri key itself, naming it in kid.
			kid, signer := f.rootSigner()
			s.hdr["kid"] = kid
			s.key = nil
			s.dlgSigner = signer
		}, wantCode: "invalid_session", wantDesc: "no delegation"},
		{name: "root-key signature with a delegation", mutate: func(s *spec) { s.key = nil }, wantCode: "invalid_session", wantDesc: "does not verify with the delegated key"},
		{name: "delegation wrong typ", mutate: func(s *spec) { s.dlgHdr["typ"] = "JWT" }, wantCode: "invalid_session", wantDesc: "delegation's typ"},
		{name: "delegation typ is the session typ", mutate: func(s *spec) { s.dlgHdr["typ"] = "poppy-session+jwt" }, wantCode: "invalid_session", wantDesc: "delegation's typ"},
		{name: "delegation missing typ", mutate: func(s *spec) { delete(s.dlgHdr, "typ") }, wantCode: "invalid_session", wantDesc: "delegation's typ"},
		{name: "delegation other iss", mutate: func(s *spec) { s.dlgClaims["iss"] = "https://other.example/agent.json" }, wantCode: "invalid_session", wantDesc: "delegation's iss"},
		{name: "delegation expired", mutate: func(s *spec) {
			s.dlgClaims["iat"] = s.dlgClaims["iat"].(int64) - 7200
			s.dlgClaims["exp"] = s.dlgClaims["iat"].(int64) + 3600
		}, wantCode: "invalid_session", wantDesc: "expired"},
		{name: "delegation longer than 24h", mutate: func(s *spec) { s.dlgClaims["exp"] = s.dlgClaims["iat"].(int64) + 24*3600 + 1 }, wantCode: "invalid_session", wantDesc: "24 hours"},
		{name: "delegation exactly 24h", mutate: func(s *spec) { s.dlgClaims["exp"] = s.dlgClaims["iat"].(int64) + 24*3600 }},
		{name: "delegation unknown kid", mutate: func(s *spec) { s.dlgHdr["kid"] = "nope" }, wantCode: "invalid_session", wantDesc: "no key in the Personal Agent's jwks_uri"},
		{name: "delegation signed by a key not in jwks_uri", mutate: func(s *spec) {
			other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			s.dlgSigner = ecSigner(t, other)
		}, wantCode: "invalid_session", wantDesc: "delegation's signature"},
		{name: "delegation alg HS256", mutate: func(s *spec) { s.dlgHdr["alg"] = "HS256" }, wantCode: "invalid_session", wantDesc: "ES256 or PS384"},
		{name: "delegation cnf.jwk with private member", mutate: func(s *spec) {
			j, _, _ := identity.PublicJWK(&s.key.PublicKey)
			var m map[string]any
			_ = json.Unmarshal(j, &m)
			m["d"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
			s.dlgClaims["cnf"] = map[string]any{"jwk": m}
		}, wantCode: "invalid_session", wantDesc: "cnf.jwk"},
		{name: "delegation without jti", mutate: func(s *spec) { delete(s.dlgClaims, "jti") }, wantCode: "invalid_session", wantDesc: "jti"},
		{name: "session kid not the thumbprint", mutate: func(s *spec) { s.hdr["kid"] = "wrong" }, wantCode: "invalid_session", wantDesc: "thumbprint"},
		{name: "session wrong typ", mutate: func(s *spec) { s.hdr["typ"] = "JWT" }, wantCode: "invalid_session", wantDesc: "typ must be poppy-session+jwt"},
		{name: "session typ is the delegation typ", mutate: func(s *spec) { s.hdr["typ"] = "poppy-delegation+jwt" }, wantCode: "invalid_session", wantDesc: "typ must be poppy-session+jwt"},
		{name: "session alg ES384", mutate: func(s *spec) { s.hdr["alg"] = "ES384" }, wantCode: "invalid_session", wantDesc: "alg must be ES256"},
		{name: "aud other Company", mutate: func(s *spec) { s.claims["aud"] = "https://other.example" }, wantCode: "invalid_session", wantDesc: "aud"},
		{name: "aud trailing slash", mutate: func(s *spec) { s.claims["aud"] = s.claims["aud"].(string) + "/" }, wantCode: "invalid_session", wantDesc: "aud"},
		{name: "aud array", mutate: func(s *spec) { s.claims["aud"] = []string{s.claims["aud"].(string)} }, wantCode: "invalid_session", wantDesc: "single string"},
		{name: "htm mismatch", mutate: func(s *spec) { s.claims["htm"] = "POST" }, wantCode: "invalid_session", wantDesc: "htm"},
		{name: "htu other path", mutate: func(s *spec) { s.claims["htu"] = f.srv.URL + "/api/other" }, wantCode: "invalid_session", wantDesc: "htu"},
		{name: "htu other host", mutate: func(s *spec) { s.claims["htu"] = "https://shop.example/api/orders" }, wantCode: "invalid_session", wantDesc: "htu"},
		{name: "htu http", mutate: func(s *spec) { s.claims["htu"] = strings.Replace(s.claims["htu"].(string), "https:", "http:", 1) }, wantCode: "invalid_session", wantDesc: "not an HTTPS URL"},
		{name: "iat too old", mutate: func(s *spec) { s.claims["iat"] = s.claims["iat"].(int64) - 61 }, wantCode: "invalid_session", wantDesc: "window"},
		{name: "iat in the future", mutate: func(s *spec) { s.claims["iat"] = s.claims["iat"].(int64) + 61 }, wantCode: "invalid_session", wantDesc: "window"},
		{name: "iat missing", mutate: func(s *spec) { delete(s.claims, "iat") }, wantCode: "invalid_session", wantDesc: "iat"},
		{name: "sub missing", mutate: func(s *spec) { delete(s.claims, "sub") }, wantCode: "invalid_session", wantDesc: "sub"},
		{name: "sid missing", mutate: func(s *spec) { delete(s.claims, "sid") }, wantCode: "invalid_session", wantDesc: "sid"},
		{name: "sid bad characters", mutate: func(s *spec) { s.claims["sid"] = "a/b" }, wantCode: "invalid_session", wantDesc: "sid"},
		{name: "jti missing", mutate: func(s *spec) { delete(s.claims, "jti") }, wantCode: "invalid_session", wantDesc: "jti"},
		{name: "iss missing", mutate: func(s *spec) { delete(s.claims, "iss") }, wantCode: "invalid_session", wantDesc: "iss"},
		{name: "iss http", mutate: func(s *spec) {
			s.claims["iss"] = strings.Replace(f.clientID, "https:", "http:", 1)
			s.dlgClaims["iss"] = s.claims["iss"]
		}, wantCode: "invalid_session", wantDesc: "not an HTTPS client_id"},
		{name: "client metadata redirect not followed", mutate: func(s *spec) {
			s.claims["iss"] = f.srv.URL + "/redirect/agent.json"
			s.dlgClaims["iss"] = s.claims["iss"]
		}, wantCode: "invalid_session", wantDesc: "redirect"},
		{name: "client metadata client_id mismatch", mutate: func(s *spec) {
			// Served at /jwks.json: a JSON document whose client_id is not its URL.
			s.claims["iss"] = f.srv.URL + "/jwks.json"
			s.dlgClaims["iss"] = s.claims["iss"]
		}, wantCode: "invalid_session", wantDesc: "client_id"},
		{name: "ath missing with token", token: token, mutate: func(s *spec) { delete(s.claims, "ath") }, wantCode: "invalid_session", wantDesc: "no ath"},
		{name: "ath without token", mutate: func(s *spec) { s.claims["ath"] = "abc" }, wantCode: "invalid_session", wantDesc: "no access token"},
		{name: "ath wrong", token: token, mutate: func(s *spec) { s.claims["ath"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }, wantCode: "invalid_session", wantDesc: "does not match the access token"},
		{name: "token issued to another client", token: token, tokenCID: "https://other.example/agent.json", wantCode: "invalid_session", wantDesc: "another client_id"},
		{name: "version missing", headers: func(h http.Header, _ string) { h.Del("Poppy-Version") }, wantCode: "version_unsupported"},
		{name: "version incompatible minor", headers: func(h http.Header, _ string) { h.Set("Poppy-Version", "0.3") }, wantCode: "version_unsupported"},
		{name: "version incompatible major", headers: func(h http.Header, _ string) { h.Set("Poppy-Version", "1.4") }, wantCode: "version_unsupported"},
		{name: "version garbage", headers: func(h http.Header, _ string) { h.Set("Poppy-Version", "0.4.1") }, wantCode: "version_unsupported"},
		{name: "unparseable extensions mean none", headers: func(h http.Header, _ string) { h.Set("Poppy-Extensions", `"operations";v=`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, path := tt.method, tt.path
			if method == "" {
				method = "GET"
			}
			if path == "" {
				path = "/api/orders"
			}
			s := f.valid(method, path, tt.token)
			if tt.mutate != nil {
				tt.mutate(s)
			}
			if s.key == nil { // sign the Session JWT with the root key
				if !s.noDlg {
					s.hdr["poppy_dlg"] = compact(s.dlgHdr, s.dlgClaims, s.dlgSigner)
				}
				_, root := f.rootSigner()
				s.noDlg = true
				s.key = nil
				jwt := compact(s.hdr, s.claims, root)
				f.check(t, tt.wantCode, tt.wantDesc, f.sendJWT(method, path, jwt, tt.token, tt.tokenCID, tt.headers))
				return
			}
			jwt := f.mint(s)
			r := f.sendJWT(method, path, jwt, tt.token, tt.tokenCID, tt.headers)
			f.check(t, tt.wantCode, tt.wantDesc, r)
			if tt.wantCode == "" {
				if !r.session.New || r.session.ClientID != f.clientID || r.session.SID != s.claims["sid"] || r.session.UserID != s.claims["sub"] || r.session.Version != "0.4" {
					t.Fatalf("session = %+v", r.session)
				}
			}
		})
	}
}

func (f *fixture) sendJWT(method, path, jwt, token, tokenCID string, headers func(http.Header, string)) response {
	return f.send(method, path, func(r *http.Request) {
		r.Header.Set("Poppy-Session", jwt)
		r.Header.Set("Poppy-Version", "0.4")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
			if tokenCID == "" {
				tokenCID = f.clientID
			}
			r.Header.Set("X-Token-Client", tokenCID)
		}
		if headers != nil {
			headers(r.Header, jwt)
		}
	})
}

func (f *fixture) check(t *testing.T, wantCode, wantDesc string, r response) {
	t.Helper()
	if wantCode == "" {
		if r.status != 200 {
			t.Fatalf("rejected: %d %s: %s", r.status, r.code, r.desc)
		}
		return
	}
	if r.status != 400 || r.code != wantCode || !strings.Contains(r.desc, wantDesc) {
		t.Fatalf("got %d %q %q, want 400 %q containing %q", r.status, r.code, r.desc, wantCode, wantDesc)
	}
}

// TestSessionContinuity covers spec 5.3 step 4, 5.5 and 3.4 across requests, with Sessions
// signed by the real session.Manager.
func TestSessionContinuity(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sign := func(s *session.Session, token string) func(*http.Request) {
		return func(r *http.Request) {
			if err := s.SignRequest(ctx, r, token); err != nil {
				t.Fatal(err)
			}
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
				r.Header.Set("X-Token-Client", f.clientID)
			}
		}
	}
	s, err := f.mgr.Open(ctx, f.company, session.Options{Extensions: []session.Extension{{Name: "operations", Version: "2"}}})
	if err != nil {
		t.Fatal(err)
	}
	first := f.send("GET", "/api/orders", sign(s, ""))
	if first.status != 200 || !first.session.New || first.session.UserID != s.UserID() || first.session.Extensions["operations"] != "2" {
		t.Fatalf("first request: %+v", first)
	}
	second := f.send("POST", "/api/orders", sign(s, "tok"))
	if second.status != 200 || second.session.New || second.session.SID != s.SID {
		t.Fatalf("second request did not continue the Session: %+v", second)
	}

	t.Run("sid reused with another sub", func(t *testing.T) {
		sp := f.valid("GET", "/api/orders", "")
		sp.claims["sid"] = s.SID
		r := f.sendJWT("GET", "/api/orders", f.mint(sp), "", "", nil)
		f.check(t, "invalid_session", "another User ID", r)
	})
	t.Run("sid reused with another agent_id", func(t *testing.T) {
		sp := f.valid("GET", "/api/orders", "")
		sp.claims["sid"], sp.claims["sub"], sp.claims["agent_id"] = s.SID, s.UserID(), "agt_x"
		r := f.sendJWT("GET", "/api/orders", f.mint(sp), "", "", func(h http.Header, _ string) { h.Set("Poppy-Extensions", `"operations";v="2"`) })
		f.check(t, "invalid_session", "another User ID or Agent ID", r)
	})
	t.Run("extensions changed within the Session", func(t *testing.T) {
		r := f.send("GET", "/api/orders", func(req *http.Request) {
			sign(s, "")(req)
			req.Header.Set("Poppy-Extensions", `"operations";v="1"`)
		})
		f.check(t, "invalid_session", "Poppy-Extensions changed", r)
	})
	t.Run("same extensions in another order and spacing", func(t *testing.T) {
		r := f.send("GET", "/api/orders", func(req *http.Request) {
			sign(s, "")(req)
			req.Header.Set("Poppy-Extensions", `"operations";v="2",   "x.example/unknown"`)
		})
		f.check(t, "", "", r)
	})
	t.Run("jti replay", func(t *testing.T) {
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/orders", nil)
		if err := s.SignRequest(ctx, req, ""); err != nil {
			t.Fatal(err)
		}
		replay := func(r *http.Request) { r.Header = req.Header.Clone() }
		f.check(t, "", "", f.send("GET", "/api/orders", replay))
		f.check(t, "invalid_session", "jti was already used", f.send("GET", "/api/orders", replay))
	})
	t.Run("ended Session", func(t *testing.T) {
		f.ver.End(f.clientID, s.SID)
		f.check(t, "session_ended", "new sid", f.send("GET", "/api/orders", sign(s, "")))
		ns, err := f.mgr.Renew(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if ns.SID == s.SID || ns.UserID() != s.UserID() {
			t.Fatalf("Renew: sid %q→%q, user %q→%q", s.SID, ns.SID, s.UserID(), ns.UserID())
		}
		r := f.send("GET", "/api/orders", sign(ns, ""))
		if r.status != 200 || !r.session.New {
			t.Fatalf("renewed Session not accepted as new: %+v", r)
		}
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/orders", nil)
		if err := s.SignRequest(ctx, req, ""); err != session.ErrSessionReplaced {
			t.Fatalf("old Session still signs: %v", err)
		}
	})
	t.Run("delegation and metadata are cached", func(t *testing.T) {
		f.fetchMu.Lock()
		defer f.fetchMu.Unlock()
		if f.fetches["/agent.json"] != 1 || f.fetches["/jwks.json"] != 1 {
			t.Fatalf("metadata fetched %d times, JWKS %d times; want 1 each", f.fetches["/agent.json"], f.fetches["/jwks.json"])
		}
	})
}

// TestDelegationRotationAndRootRotation checks that a new delegated key is accepted (spec 5.2:
// Companies must not expect it to stay the same) and that a rotated root key is found by
// refetching the JWKS.
func TestDelegationRotationAndRootRotation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.mgr.Open(ctx, f.company, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	do := func() response {
		return f.send("GET", "/api/x", func(r *http.Request) {
			if err := s.SignRequest(ctx, r, ""); err != nil {
				t.Fatal(err)
			}
		})
	}
	f.check(t, "", "", do())
	if err := f.op.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(11*time.Hour + 30*time.Minute) // < 1 h left: the next request uses a new delegated key from the new root key
	r := do()
	f.check(t, "", "", r)
	if r.session.New {
		t.Fatal("a new delegated key started a new Session")
	}
	// Root rotation within the metadata cache's lifetime: the unknown kid makes the verifier
	// refetch the JWKS (at most every 30 s).
	if err := f.op.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(31 * time.Second)
	f.fetchMu.Lock()
	before := f.fetches["/jwks.json"]
	f.fetchMu.Unlock()
	f.check(t, "", "", f.sendJWT("GET", "/api/x", f.mint(f.valid("GET", "/api/x", "")), "", "", nil))
	f.fetchMu.Lock()
	after := f.fetches["/jwks.json"]
	f.fetchMu.Unlock()
	if after != before+1 {
		t.Fatalf("JWKS fetched %d more times, want 1", after-before)
	}
}

// TestPS384Delegation: Companies SHOULD accept PS384 delegations (spec 5.2, 10.7).
func TestPS384Delegation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	op := newRSAOperator(t)
	cid := f.srv.URL + "/ps/agent.json"
	agent, err := identity.New(identity.Config{ClientID: cid}, op, f.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	// Serve it on the same listener.
	h := agent.Handler(nil)
	mux := http.NewServeMux()
	mux.Handle("/ps/", h)
	old := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/ps/") {
			mux.ServeHTTP(w, r)
			return
		}
		old.ServeHTTP(w, r)
	})
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	dlg, _, err := agent.Delegate(ctx, &key.PublicKey, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, tp, _ := identity.PublicJWK(&key.PublicKey)
	now := f.clock.Now().Unix()
	jwt := compact(map[string]any{"typ": "poppy-session+jwt", "alg": "ES256", "kid": tp, "poppy_dlg": dlg},
		map[string]any{"iss": cid, "aud": f.company, "sid": "s1", "sub": "u1", "htm": "GET", "htu": f.srv.URL + "/api/x", "iat": now, "jti": "j1"},
		ecSigner(t, key))
	f.check(t, "", "", f.sendJWT("GET", "/api/x", jwt, "", "", nil))
}

// TestDefaultClientRefusesLoopback: without a configured client, the verifier does not connect
// to loopback addresses named by a client_id (spec 3 "Redirects and addresses").
func TestDefaultClientRefusesLoopback(t *testing.T) {
	f := newFixture(t)
	v := sessioncheck.New(sessioncheck.Config{Identifier: f.company, Now: f.clock.Now})
	sp := f.valid("GET", "/api/orders", "")
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/orders", nil)
	req.Header.Set("Poppy-Session", f.mint(sp))
	req.Header.Set("Poppy-Version", "0.4")
	_, err := v.Verify(context.Background(), req, "", "")
	var e *sessioncheck.Error
	if err == nil || !asError(err, &e) || e.Code != "invalid_session" || !strings.Contains(e.Description, "cannot fetch") {
		t.Fatalf("err = %v", err)
	}
	f.fetchMu.Lock()
	defer f.fetchMu.Unlock()
	if f.fetches["/agent.json"] != 0 {
		t.Fatal("the default client connected to a loopback address")
	}
}

func asError(err error, e **sessioncheck.Error) bool {
	x, ok := err.(*sessioncheck.Error)
	*e = x
	return ok
}

// TestReplayCacheBounded: the replay cache (spec 5.3 "Replayed JWTs") holds at most MaxJTIs
// jtis, filled past its bound; the jti forgotten first goes, and a replay of its JWT is refused
// all the same (as older than the cache covers), while a remembered one is refused as used and
// fresh JWTs are accepted.
func TestReplayCacheBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const max = 3
	f.ver = sessioncheck.New(sessioncheck.Config{Identifier: f.company, HTTPClient: f.onlyServerClient(), Now: f.clock.Now, MaxJTIs: max})
	s, err := f.mgr.Open(ctx, f.company, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var signed []http.Header
	for i := range 2 * max {
		req, _ := http.NewRequest("GET", f.srv.URL+"/api/orders", nil)
		if err := s.SignRequest(ctx, req, ""); err != nil {
			t.Fatal(err)
		}
		signed = append(signed, req.Header.Clone())
		f.check(t, "", "", f.send("GET", "/api/orders", func(r *http.Request) { r.Header = signed[i].Clone() }))
		if n := f.ver.JTIs(); n > max {
			t.Fatalf("after %d requests the replay cache holds %d jtis, over its bound of %d", i+1, n, max)
		}
		f.clock.Advance(time.Second)
	}
	replay := func(i int) response {
		return f.send("GET", "/api/orders", func(r *http.Request) { r.Header = signed[i].Clone() })
	}
	f.check(t, "invalid_session", "older than the Company's replay cache", replay(0))
	f.check(t, "invalid_session", "jti was already used", replay(2*max-1))
}

// TestHTUAnyScheme: the option the reference Company's htu-any-scheme fault sets accepts the
// http:// form of the request URL as htu, and nothing more: another path is still refused.
// Without it, the same htu is refused (TestVerifyChecks "htu http"; spec 3).
func TestHTUAnyScheme(t *testing.T) {
	f := newFixture(t)
	f.ver = sessioncheck.New(sessioncheck.Config{Identifier: f.company, HTTPClient: f.onlyServerClient(), Now: f.clock.Now,
		Versions: []string{"0.4"}, HTUAnyScheme: true})
	for _, tc := range []struct {
		name, htu, wantCode string
	}{
		{"http form of the request URL", strings.Replace(f.srv.URL, "https:", "http:", 1) + "/api/orders", ""},
		{"http form of another path", strings.Replace(f.srv.URL, "https:", "http:", 1) + "/api/other", "invalid_session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := f.valid("GET", "/api/orders", "")
			s.claims["htu"] = tc.htu
			f.check(t, tc.wantCode, "", f.sendJWT("GET", "/api/orders", f.mint(s), "", "", nil))
		})
	}
}
