package sessioncheck_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/sessioncheck"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// fixture is a loopback TLS server that serves the Personal Agent's client metadata and JWKS
// (the identity handler) and a Company API protected by sessioncheck, over real HTTPS.
type fixture struct {
	t        testing.TB
	srv      *httptest.Server
	clock    *refcompany.Clock
	agent    *identity.Agent
	op       *identity.LocalOperator
	mgr      *session.Manager
	ver      *sessioncheck.Verifier
	company  string
	clientID string
	fetches  map[string]int
	fetchMu  sync.Mutex
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: refcompany.NewFrozenClock(time.Unix(1790900000, 0)), fetches: map[string]int{}}
	mux := http.NewServeMux()
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.fetchMu.Lock()
		f.fetches[r.URL.Path]++
		f.fetchMu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	f.company = f.srv.URL // https://127.0.0.1:PORT as the Company identifier
	f.clientID = f.srv.URL + "/agent.json"
	sec := store.NewSecrets(store.NewMemoryKV())
	f.op = identity.NewLocalOperator(sec, f.clock.Now)
	var err error
	f.agent, err = identity.New(identity.Config{ClientID: f.clientID}, f.op, f.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	h := f.agent.Handler(nil)
	mux.Handle("/agent.json", h)
	mux.Handle("/jwks.json", h)
	// A client_id whose metadata URL redirects to the real document (spec 5.3 step 1 forbids following).
	mux.HandleFunc("/redirect/agent.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/agent.json", http.StatusFound)
	})
	f.mgr, err = session.NewManager(session.Config{Secrets: sec, Delegator: f.agent, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.ver = sessioncheck.New(sessioncheck.Config{
		Identifier: f.company,
		HTTPClient: f.onlyServerClient(), // trusts the test certificate, dials only the test server (configured on purpose)
		Now:        f.clock.Now,
		Versions:   []string{"0.4"},
	})
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		s, err := f.ver.Verify(r.Context(), r, token, r.Header.Get("X-Token-Client"))
		if err != nil {
			err.(*sessioncheck.Error).WriteJSON(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	return f
}

// onlyServerClient trusts the test server's certificate and refuses to connect anywhere else,
// so no test or fuzz input can make the verifier contact another address.
func (f *fixture) onlyServerClient() *http.Client {
	c := f.srv.Client()
	tr := c.Transport.(*http.Transport).Clone()
	addr := f.srv.Listener.Addr().String()
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
		if a != addr {
			return nil, fmt.Errorf("test client: refusing to dial %s", a)
		}
		return dial(ctx, network, a)
	}
	return &http.Client{Transport: tr}
}

// response is what the protected API answered.
type response struct {
	status  int
	code    string
	desc    string
	session sessioncheck.Session
}

// send makes a request to path; prepare sets its headers (Session JWT, token, version...).
func (f *fixture) send(method, path string, prepare func(*http.Request)) response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	prepare(req)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &out.session); err != nil {
			f.t.Fatalf("bad body %s", body)
		}
		return out
	}
	var e struct {
		Error string `json:"error"`
		Desc  string `json:"error_description"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		f.t.Fatalf("error body is not JSON: %s", body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		f.t.Fatalf("error Content-Type = %q", ct)
	}
	out.code, out.desc = e.Error, e.Desc
	return out
}

// spec is a Session JWT under construction, with its delegation, so tests can tamper with any part.
type spec struct {
	dlgHdr, dlgClaims map[string]any
	hdr, claims       map[string]any
	key               *ecdsa.PrivateKey // signs the Session JWT
	dlgSigner         func(input []byte) []byte
	noDlg             bool
}

func (f *fixture) rootSigner() (string, func([]byte) []byte) {
	ctx := context.Background()
	kid, alg, err := f.op.SigningKey(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return kid, func(in []byte) []byte {
		sig, err := f.op.Sign(ctx, kid, alg, in)
		if err != nil {
			f.t.Fatal(err)
		}
		return sig
	}
}

// valid returns a correct spec for a request (method, path) with an optional access token.
func (f *fixture) valid(method, path, token string) *spec {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pub, tp, err := identity.PublicJWK(&key.PublicKey)
	if err != nil {
		f.t.Fatal(err)
	}
	var cnf map[string]any
	_ = json.Unmarshal(pub, &cnf)
	kid, signer := f.rootSigner()
	now := f.clock.Now().Unix()
	s := &spec{
		dlgHdr:    map[string]any{"alg": "ES256", "typ": "poppy-delegation+jwt", "kid": kid},
		dlgClaims: map[string]any{"iss": f.clientID, "cnf": map[string]any{"jwk": cnf}, "iat": now, "exp": now + 3600, "jti": identity.NewID(16)},
		hdr:       map[string]any{"typ": "poppy-session+jwt", "alg": "ES256", "kid": tp},
		claims: map[string]any{"iss": f.clientID, "aud": f.company, "sid": identity.NewID(16), "sub": "usr_" + identity.NewID(12),
			"htm": method, "htu": f.srv.URL + path, "iat": now, "jti": identity.NewID(16)},
		key:       key,
		dlgSigner: signer,
	}
	if token != "" {
		h := sha256.Sum256([]byte(token))
		s.claims["ath"] = base64.RawURLEncoding.EncodeToString(h[:])
	}
	return s
}

func compact(hdr, claims map[string]any, sign func([]byte) []byte) string {
	hb, _ := json.Marshal(hdr)
	cb, _ := json.Marshal(claims)
	in := jwsbb.SignBuffer(nil, hb, cb, base64.RawURLEncoding, true)
	sig := sign(in)
	return string(in) + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func ecSigner(t testing.TB, key *ecdsa.PrivateKey) func([]byte) []byte {
	return func(in []byte) []byte {
		sig, err := jwsbb.Sign(key, "ES256", in, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
}

func (f *fixture) mint(s *spec) string {
	if !s.noDlg {
		s.hdr["poppy_dlg"] = compact(s.dlgHdr, s.dlgClaims, s.dlgSigner)
	}
	return compact(s.hdr, s.claims, ecSigner(f.t, s.key))
}

// rsaOperator is an identity.Operator with an RSA key signing PS384, as a blind-signing
// operator's output would verify (spec 10.7).
type rsaOperator struct {
	key *rsa.PrivateKey
	kid string
}

func newRSAOperator(t testing.TB) *rsaOperator {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := jwk.Import(&k.PublicKey)
	kid, _ := identity.Thumbprint(pub)
	return &rsaOperator{key: k, kid: kid}
}

func (o *rsaOperator) SigningKey(context.Context) (string, jwa.SignatureAlgorithm, error) {
	return o.kid, jwa.PS384(), nil
}

func (o *rsaOperator) Sign(_ context.Context, _ string, alg jwa.SignatureAlgorithm, in []byte) ([]byte, error) {
	return jwsbb.Sign(o.key, alg.String(), in, rand.Reader)
}

func (o *rsaOperator) PublicKeys(context.Context) (jwk.Set, error) {
	pub, _ := jwk.Import(&o.key.PublicKey)
	_ = pub.Set(jwk.KeyIDKey, o.kid)
	_ = pub.Set(jwk.AlgorithmKey, jwa.PS384())
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	return set, nil
}
