package identity_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

var fixedNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return fixedNow }

func newAgent(t *testing.T, clientID string) (*identity.Agent, *identity.LocalOperator, store.Secrets) {
	t.Helper()
	sec := store.NewSecrets(store.NewMemoryKV())
	op := identity.NewLocalOperator(sec, clock)
	a, err := identity.New(identity.Config{ClientID: clientID}, op, clock)
	if err != nil {
		t.Fatal(err)
	}
	return a, op, sec
}

func TestNewValidatesConfig(t *testing.T) {
	op := identity.NewLocalOperator(store.NewSecrets(store.NewMemoryKV()), clock)
	tests := []struct {
		name    string
		cfg     identity.Config
		wantErr string
	}{
		{"ok", identity.Config{ClientID: "https://agent.example/agent.json"}, ""},
		{"ok with port", identity.Config{ClientID: "https://agent.localhost:8443/agent.json"}, ""},
		{"http", identity.Config{ClientID: "http://agent.example/agent.json"}, "HTTPS"},
		{"query", identity.Config{ClientID: "https://agent.example/agent.json?x=1"}, "no query"},
		{"fragment", identity.Config{ClientID: "https://agent.example/agent.json#f"}, "fragment"},
		{"no path", identity.Config{ClientID: "https://agent.example"}, "path"},
		{"uppercase host", identity.Config{ClientID: "https://Agent.example/agent.json"}, "lowercase"},
		{"dot segment", identity.Config{ClientID: "https://agent.example/a/../agent.json"}, "dot segments"},
		{"jwks other host", identity.Config{ClientID: "https://agent.example/agent.json", JWKSURI: "https://keys.example/jwks.json"}, "same host"},
		{"jwks http", identity.Config{ClientID: "https://agent.example/agent.json", JWKSURI: "http://agent.example/jwks.json"}, "HTTPS"},
		{"redirect other host", identity.Config{ClientID: "https://agent.example/agent.json", RedirectURIs: []string{"https://evil.example/cb"}}, "same host"},
		{"logo http", identity.Config{ClientID: "https://agent.example/agent.json", LogoURI: "http://agent.example/l.png"}, "logo_uri"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := identity.New(tt.cfg, op, clock)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMetadataDocument(t *testing.T) {
	a, err := identity.New(identity.Config{
		ClientID:     "https://agent.example/poppy/agent.json",
		ClientName:   "Test Agent",
		RedirectURIs: []string{"https://agent.example/oauth/callback"},
	}, identity.NewLocalOperator(store.NewSecrets(store.NewMemoryKV()), clock), clock)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := a.MetadataJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"client_id":                  "https://agent.example/poppy/agent.json",
		"client_name":                "Test Agent",
		"logo_uri":                   "https://agent.example/poppy/logo.png",
		"jwks_uri":                   "https://agent.example/poppy/jwks.json",
		"redirect_uris":              []any{"https://agent.example/oauth/callback", "http://127.0.0.1/callback"},
		"grant_types":                []any{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"},
		"response_types":             []any{"code"},
		"token_endpoint_auth_method": "private_key_jwt",
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("metadata =\n%v\nwant\n%v", m, want)
	}
	if !identity.IsLoopbackRedirect(identity.LoopbackRedirectURI) || identity.IsLoopbackRedirect("https://127.0.0.1/callback") || identity.IsLoopbackRedirect("http://localhost/callback") {
		t.Fatal("IsLoopbackRedirect misclassifies RFC 8252 §7.3 loopback URIs")
	}
}

func TestRootKeyGeneratedOncePersistedAndPublic(t *testing.T) {
	ctx := context.Background()
	a, op, sec := newAgent(t, "https://agent.example/agent.json")
	kid1, alg, err := op.SigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if alg.String() != "ES256" {
		t.Fatalf("alg = %s, want ES256", alg)
	}
	// A second operator over the same store (a restart) uses the same key.
	kid2, _, err := identity.NewLocalOperator(sec, clock).SigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if kid1 != kid2 {
		t.Fatalf("root key not persisted: %s then %s", kid1, kid2)
	}
	raw, err := a.JWKSJSON(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 {
		t.Fatalf("JWKS has %d keys, want 1", len(set.Keys))
	}
	k := set.Keys[0]
	if _, priv := k["d"]; priv {
		t.Fatal("JWKS contains the private member d")
	}
	if k["kid"] != kid1 || k["alg"] != "ES256" || k["kty"] != "EC" || k["crv"] != "P-256" {
		t.Fatalf("JWKS key = %v", k)
	}
}

func TestRotateKeepsOlderKeysNewestFirst(t *testing.T) {
	ctx := context.Background()
	_, op, _ := newAgent(t, "https://agent.example/agent.json")
	old, _, _ := op.SigningKey(ctx)
	if err := op.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	cur, _, _ := op.SigningKey(ctx)
	if cur == old {
		t.Fatal("Rotate did not change the signing key")
	}
	set, _ := op.PublicKeys(ctx)
	if set.Len() != 2 {
		t.Fatalf("JWKS has %d keys after rotation, want 2", set.Len())
	}
	first, _ := set.Key(0)
	if kid, _ := first.KeyID(); kid != cur {
		t.Fatalf("newest key is not first")
	}
	if err := op.Retire(ctx, cur); err == nil {
		t.Fatal("retiring the current signing key succeeded")
	}
	if err := op.Retire(ctx, old); err != nil {
		t.Fatal(err)
	}
	set, _ = op.PublicKeys(ctx)
	if set.Len() != 1 {
		t.Fatalf("JWKS has %d keys after Retire, want 1", set.Len())
	}
}

func decodeJWT(t *testing.T, compact string) (map[string]any, map[string]any) {
	t.Helper()
	parts := strings.Split(compact, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", compact)
	}
	var h, c map[string]any
	for i, dst := range []*map[string]any{&h, &c} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatal(err)
		}
	}
	return h, c
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func verifyWithJWKS(t *testing.T, a *identity.Agent, compact string) {
	t.Helper()
	raw, err := a.JWKSJSON(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jws.Verify([]byte(compact), jws.WithKeySet(set)); err != nil {
		t.Fatalf("signature does not verify with the published JWKS: %v", err)
	}
}

func TestClientAssertion(t *testing.T) {
	a, op, _ := newAgent(t, "https://agent.example/agent.json")
	ctx := context.Background()
	as, err := a.ClientAssertion(ctx, "https://auth.shop.example")
	if err != nil {
		t.Fatal(err)
	}
	verifyWithJWKS(t, a, as)
	h, c := decodeJWT(t, as)
	kid, _, _ := op.SigningKey(ctx)
	if !reflect.DeepEqual(h, map[string]any{"alg": "ES256", "kid": kid}) {
		t.Fatalf("header = %v", h)
	}
	if got := keysOf(c); !reflect.DeepEqual(got, []string{"aud", "exp", "iat", "iss", "jti", "sub"}) {
		t.Fatalf("claims = %v", got)
	}
	if c["iss"] != a.ClientID() || c["sub"] != a.ClientID() || c["aud"] != "https://auth.shop.example" {
		t.Fatalf("claims = %v", c)
	}
	if c["iat"].(float64) != float64(fixedNow.Unix()) || c["exp"].(float64) != float64(fixedNow.Unix()+60) {
		t.Fatalf("iat/exp = %v/%v", c["iat"], c["exp"])
	}
	as2, _ := a.ClientAssertion(ctx, "https://auth.shop.example")
	if _, c2 := decodeJWT(t, as2); c2["jti"] == c["jti"] || len(c["jti"].(string)) < 22 {
		t.Fatal("jti is reused or too short to be unguessable")
	}
	if _, err := a.ClientAssertion(ctx, "http://auth.shop.example"); err == nil {
		t.Fatal("client assertion for a non-HTTPS issuer was made")
	}
}

func TestDelegationNamesNothingAboutUserOrCompany(t *testing.T) {
	a, op, _ := newAgent(t, "https://agent.example/agent.json")
	ctx := context.Background()
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	dlg, exp, err := a.Delegate(ctx, &priv.PublicKey, 12*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	verifyWithJWKS(t, a, dlg)
	h, c := decodeJWT(t, dlg)
	kid, _, _ := op.SigningKey(ctx)
	if !reflect.DeepEqual(h, map[string]any{"alg": "ES256", "typ": "poppy-delegation+jwt", "kid": kid}) {
		t.Fatalf("header = %v", h)
	}
	// Exactly these claims: nothing about the User or the Company (spec 5.2).
	if got := keysOf(c); !reflect.DeepEqual(got, []string{"cnf", "exp", "iat", "iss", "jti"}) {
		t.Fatalf("delegation claims = %v, want exactly cnf exp iat iss jti", got)
	}
	cnf := c["cnf"].(map[string]any)
	if got := keysOf(cnf); !reflect.DeepEqual(got, []string{"jwk"}) {
		t.Fatalf("cnf = %v", got)
	}
	pub := cnf["jwk"].(map[string]any)
	if got := keysOf(pub); !reflect.DeepEqual(got, []string{"crv", "kty", "x", "y"}) {
		t.Fatalf("cnf.jwk members = %v, want only the public ones", got)
	}
	if c["iss"] != a.ClientID() {
		t.Fatalf("iss = %v", c["iss"])
	}
	if int64(c["exp"].(float64))-int64(c["iat"].(float64)) != int64(12*time.Hour/time.Second) || !exp.Equal(fixedNow.Add(12*time.Hour)) {
		t.Fatalf("lifetime wrong: iat %v exp %v (returned %v)", c["iat"], c["exp"], exp)
	}
	for _, bad := range []time.Duration{0, -time.Hour, 24*time.Hour + time.Second} {
		if _, _, err := a.Delegate(ctx, &priv.PublicKey, bad); err == nil {
			t.Fatalf("delegation with lifetime %v was made", bad)
		}
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, _, err := a.Delegate(ctx, &p384.PublicKey, time.Hour); err == nil {
		t.Fatal("delegation for a P-384 key was made")
	}
}

func TestHandlerServesMetadataJWKSAndLogo(t *testing.T) {
	sec := store.NewSecrets(store.NewMemoryKV())
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	defer srv.Close()
	a, err := identity.New(identity.Config{ClientID: srv.URL + "/agent.json"}, identity.NewLocalOperator(sec, clock), clock)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = a.Handler(nil)
	c := srv.Client()
	tests := []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/agent.json", 200, "application/json"},
		{"GET", "/jwks.json", 200, "application/json"},
		{"HEAD", "/jwks.json", 200, "application/json"},
		{"GET", "/logo.png", 200, "image/png"},
		{"GET", "/other.json", 404, ""},
		{"POST", "/agent.json", 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.ctype != "" && resp.Header.Get("Content-Type") != tt.ctype {
				t.Fatalf("Content-Type = %q, want %q", resp.Header.Get("Content-Type"), tt.ctype)
			}
			if tt.method == "GET" && tt.path == "/agent.json" {
				var m identity.Metadata
				if err := json.Unmarshal(body, &m); err != nil || m.ClientID != srv.URL+"/agent.json" || m.JWKSURI != srv.URL+"/jwks.json" {
					t.Fatalf("metadata = %s (%v)", body, err)
				}
			}
			if tt.method == "GET" && tt.path == "/jwks.json" {
				if _, err := jwk.Parse(body); err != nil {
					t.Fatalf("JWKS does not parse: %v", err)
				}
			}
		})
	}
}

func TestExportWritesPublishableFiles(t *testing.T) {
	a, _, _ := newAgent(t, "https://agent.example/agent.json")
	dir := filepath.Join(t.TempDir(), "out")
	files, err := a.Export(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("wrote %v", files)
	}
	jwks, err := os.ReadFile(filepath.Join(dir, "jwks.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(jwks), `"d"`) {
		t.Fatal("exported JWKS contains a private member")
	}
	meta, _ := os.ReadFile(filepath.Join(dir, "agent.json"))
	var m identity.Metadata
	if err := json.Unmarshal(meta, &m); err != nil || m.ClientID != "https://agent.example/agent.json" {
		t.Fatalf("agent.json = %s", meta)
	}
}

// misconfiguredOperator is a LocalOperator whose SigningKey answer is replaced, as a remote
// operator (spec 10.7) could answer.
type misconfiguredOperator struct {
	*identity.LocalOperator
	kid string
	alg jwa.SignatureAlgorithm
}

func (o misconfiguredOperator) SigningKey(context.Context) (string, jwa.SignatureAlgorithm, error) {
	return o.kid, o.alg, nil
}

// TestSignRefusesOperatorAlgOutsideSpec: whatever the operator names, client assertions and
// delegations are only ES256 or PS384 with a kid (spec 4.1, 5.2).
func TestSignRefusesOperatorAlgOutsideSpec(t *testing.T) {
	ctx := context.Background()
	local := identity.NewLocalOperator(store.NewSecrets(store.NewMemoryKV()), clock)
	kid, _, err := local.SigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, tc := range []struct {
		name   string
		kid    string
		alg    jwa.SignatureAlgorithm
		wantOK bool
	}{
		{name: "ES256", kid: kid, alg: jwa.ES256(), wantOK: true},
		{name: "none", kid: kid, alg: jwa.NoSignature()},
		{name: "HS256", kid: kid, alg: jwa.HS256()},
		{name: "RS256", kid: kid, alg: jwa.RS256()},
		{name: "ES256 without kid", kid: "", alg: jwa.ES256()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := identity.New(identity.Config{ClientID: "https://agent.example/agent.json"}, misconfiguredOperator{local, tc.kid, tc.alg}, clock)
			if err != nil {
				t.Fatal(err)
			}
			_, aerr := a.ClientAssertion(ctx, "https://auth.shop.example")
			_, _, derr := a.Delegate(ctx, &priv.PublicKey, time.Hour)
			if tc.wantOK && (aerr != nil || derr != nil) {
				t.Fatalf("assertion: %v, delegation: %v", aerr, derr)
			}
			if !tc.wantOK && (aerr == nil || derr == nil || !strings.Contains(aerr.Error(), "spec")) {
				t.Fatalf("signed with alg %q kid %q: assertion err %v, delegation err %v", tc.alg, tc.kid, aerr, derr)
			}
		})
	}
}
