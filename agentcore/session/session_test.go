package session_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// countingSecrets wraps store.Secrets and counts every call.
type countingSecrets struct {
	store.Secrets
	calls atomic.Int64
	fail  atomic.Bool // UpdateCompany fails, as a locked keyring would
}

func (c *countingSecrets) LoadRoot(ctx context.Context) (*store.RootBundle, error) {
	c.calls.Add(1)
	return c.Secrets.LoadRoot(ctx)
}
func (c *countingSecrets) SaveRoot(ctx context.Context, b *store.RootBundle) error {
	c.calls.Add(1)
	return c.Secrets.SaveRoot(ctx, b)
}
func (c *countingSecrets) LoadCompany(ctx context.Context, company, account string) (*store.CompanyBundle, error) {
	c.calls.Add(1)
	return c.Secrets.LoadCompany(ctx, company, account)
}
func (c *countingSecrets) UpdateCompany(ctx context.Context, company, account string, fn func(*store.CompanyBundle) error) (*store.CompanyBundle, error) {
	c.calls.Add(1)
	if c.fail.Load() {
		return nil, errors.New("keyring locked")
	}
	return c.Secrets.UpdateCompany(ctx, company, account, fn)
}

type env struct {
	clock   *refcompany.Clock
	secrets *countingSecrets
	agent   *identity.Agent
	mgr     *session.Manager
}

func newEnv(t testing.TB, secrets store.Secrets) *env {
	t.Helper()
	if secrets == nil {
		secrets = store.NewSecrets(store.NewMemoryKV())
	}
	e := &env{clock: refcompany.NewFrozenClock(time.Unix(1790900000, 0)), secrets: &countingSecrets{Secrets: secrets}}
	var err error
	e.agent, err = identity.New(identity.Config{ClientID: "https://agent.example/agent.json"}, identity.NewLocalOperator(e.secrets, e.clock.Now), e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	e.mgr, err = session.NewManager(session.Config{Secrets: e.secrets, Delegator: e.agent, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) open(t testing.TB, company string, o session.Options) *session.Session {
	t.Helper()
	s, err := e.mgr.Open(context.Background(), company, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type signed struct {
	hdr    map[string]any
	claims map[string]any
	req    *http.Request
}

func sign(t testing.TB, s *session.Session, method, target, token string) signed {
	t.Helper()
	req, err := http.NewRequest(method, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SignRequest(context.Background(), req, token); err != nil {
		t.Fatal(err)
	}
	h, p, _, err := jwsbb.SplitCompactString(req.Header.Get("Poppy-Session"))
	if err != nil {
		t.Fatal(err)
	}
	out := signed{req: req}
	for _, x := range []struct {
		in  []byte
		dst *map[string]any
	}{{h, &out.hdr}, {p, &out.claims}} {
		b, err := base64.RawURLEncoding.DecodeString(string(x.in))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, x.dst); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestSignRequestHeadersAndClaims(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t, "https://auth.shop.example", session.Options{AgentID: true, Extensions: []session.Extension{{Name: "operations", Version: "2"}, {Name: "links", Version: "1"}}})
	const token = "at_123"
	r := sign(t, s, "POST", "https://API.shop.example:443/orders/o1?x=1#f", token)
	if got := r.req.Header.Get("Poppy-Version"); got != "0.4" {
		t.Fatalf("Poppy-Version = %q", got)
	}
	if got := r.req.Header.Get("Poppy-Extensions"); got != `"operations";v="2", "links";v="1"` {
		t.Fatalf("Poppy-Extensions = %q", got)
	}
	keys := func(m map[string]any) []string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		sort.Strings(k)
		return k
	}
	if got := keys(r.hdr); !reflect.DeepEqual(got, []string{"alg", "kid", "poppy_dlg", "typ"}) || r.hdr["typ"] != "poppy-session+jwt" || r.hdr["alg"] != "ES256" {
		t.Fatalf("header = %v", r.hdr)
	}
	if got := keys(r.claims); !reflect.DeepEqual(got, []string{"agent_id", "ath", "aud", "htm", "htu", "iat", "iss", "jti", "sid", "sub"}) {
		t.Fatalf("claims = %v", got)
	}
	sum := sha256.Sum256([]byte(token))
	want := map[string]any{
		"iss": "https://agent.example/agent.json", "aud": "https://auth.shop.example", "sid": s.SID, "sub": s.UserID(),
		"agent_id": s.AgentID(), "htm": "POST", "htu": "https://api.shop.example/orders/o1", "iat": float64(1790900000),
		"ath": base64.RawURLEncoding.EncodeToString(sum[:]), "jti": r.claims["jti"],
	}
	if !reflect.DeepEqual(r.claims, want) {
		t.Fatalf("claims =\n%v\nwant\n%v", r.claims, want)
	}
	// Signed out: no ath, and no agent_id without the option.
	s2 := e.open(t, "https://auth.shop.example", session.Options{Account: "business"})
	r2 := sign(t, s2, "GET", "https://api.shop.example", "")
	if _, has := r2.claims["ath"]; has {
		t.Fatal("ath sent without an access token")
	}
	if _, has := r2.claims["agent_id"]; has {
		t.Fatal("agent_id sent without the option")
	}
	if r2.claims["htu"] != "https://api.shop.example/" || r2.req.Header.Get("Poppy-Extensions") != "" {
		t.Fatalf("htu = %v, extensions = %q", r2.claims["htu"], r2.req.Header.Get("Poppy-Extensions"))
	}
	if r2.claims["sub"] != r.claims["sub"] {
		t.Fatal("the User ID differs between accounts at the same Company (spec 5.1: one per User and Company)")
	}
	if r2.claims["sid"] == r.claims["sid"] {
		t.Fatal("two accounts share a Session")
	}
	if r.claims["jti"] == sign(t, s, "POST", "https://api.shop.example/orders/o1", token).claims["jti"] {
		t.Fatal("jti reused")
	}
}

func TestHTU(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"https://api.example/a/b?q=1#f", "https://api.example/a/b", ""},
		{"https://API.Example:443/a", "https://api.example/a", ""},
		{"https://api.example:8443", "https://api.example:8443/", ""},
		{"https://api.example/a%20b", "https://api.example/a%20b", ""},
		{"http://api.example/a", "", "HTTPS"},
	}
	for _, tt := range tests {
		u, _ := url.Parse(tt.in)
		got, err := session.HTU(u)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("HTU(%q) err = %v", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("HTU(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestUserIDsRandomStablePairwise(t *testing.T) {
	kv := store.NewSecrets(store.NewMemoryKV())
	e := newEnv(t, kv)
	a := e.open(t, "https://auth.a.example", session.Options{AgentID: true})
	b := e.open(t, "https://auth.b.example", session.Options{AgentID: true})
	if a.UserID() == b.UserID() || a.AgentID() == b.AgentID() {
		t.Fatal("User IDs or Agent IDs shared between Companies")
	}
	for _, id := range []string{a.UserID(), a.AgentID()} {
		raw, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(raw) < 16 {
			t.Fatalf("ID %q is not ≥128 random bits in base64url", id)
		}
	}
	// Stable: a restart (new Manager over the same store) gives the same IDs.
	e2 := newEnv(t, kv)
	a2 := e2.open(t, "https://auth.a.example", session.Options{AgentID: true})
	if a2.UserID() != a.UserID() || a2.AgentID() != a.AgentID() {
		t.Fatal("User ID or Agent ID not stable across restarts")
	}
	if a2.SID == a.SID {
		t.Fatal("sid reused across Managers")
	}
	b1, err := kv.LoadCompany(context.Background(), "https://auth.a.example", "")
	if err != nil || b1.UserID != a.UserID() {
		t.Fatalf("User ID not in the Company bundle: %v", err)
	}
}

func TestAnonymousBrowsing(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	reg := e.open(t, "https://auth.a.example", session.Options{})
	anon := e.open(t, "https://auth.a.example", session.Options{Anonymous: true})
	if anon.UserID() == reg.UserID() {
		t.Fatal("anonymous Session uses the regular User ID")
	}
	req, _ := http.NewRequest("GET", "https://api.a.example/x", nil)
	if err := anon.SignRequest(ctx, req, "some-token"); !errors.Is(err, session.ErrAnonymousToken) {
		t.Fatalf("anonymous Session signed with a token: %v", err)
	}
	if req.Header.Get("Poppy-Session") != "" {
		t.Fatal("a header was set although signing was refused")
	}
	ra, rr := sign(t, anon, "GET", "https://api.a.example/x", ""), sign(t, reg, "GET", "https://api.a.example/x", "")
	if ra.hdr["kid"] == rr.hdr["kid"] {
		t.Fatal("anonymous and regular User IDs share a delegated key")
	}
	// The anonymous User ID is never stored.
	names, _ := e.secrets.Companies(ctx)
	b, _ := e.secrets.LoadCompany(ctx, "https://auth.a.example", "")
	raw, _ := json.Marshal(b)
	if strings.Contains(string(raw), anon.UserID()) || len(names) != 1 {
		t.Fatalf("anonymous identity stored: %v %s", names, raw)
	}
	if _, err := e.mgr.Open(ctx, "https://auth.a.example", session.Options{Anonymous: true, Account: "acct"}); err == nil {
		t.Fatal("anonymous Session with an account was opened")
	}
	first := anon.UserID()
	e.mgr.Close(anon)
	if err := anon.SignRequest(ctx, req, ""); !errors.Is(err, session.ErrSessionReplaced) {
		t.Fatalf("closed anonymous Session still signs: %v", err)
	}
	anon2 := e.open(t, "https://auth.a.example", session.Options{Anonymous: true})
	if anon2.UserID() == first {
		t.Fatal("a new anonymous browsing session reused the discarded User ID")
	}
}

// TestDelegatedKeysNeverShared: each User ID has its own delegated key and delegation (spec 5.2).
func TestDelegatedKeysNeverShared(t *testing.T) {
	e := newEnv(t, nil)
	kids, dlgs := map[string]string{}, map[string]string{}
	for _, c := range []string{"https://auth.a.example", "https://auth.b.example", "https://c.example"} {
		for _, anon := range []bool{false, true} {
			s := e.open(t, c, session.Options{Anonymous: anon})
			r := sign(t, s, "GET", "https://api.example/x", "")
			kid, dlg := r.hdr["kid"].(string), r.hdr["poppy_dlg"].(string)
			if other, dup := kids[kid]; dup {
				t.Fatalf("User IDs %s and %s share delegated key %s", other, s.UserID(), kid)
			}
			if _, dup := dlgs[dlg]; dup {
				t.Fatal("two User IDs share a delegation")
			}
			kids[kid], dlgs[dlg] = s.UserID(), s.UserID()
			// Sessions of the same User ID share it.
			s2 := e.open(t, c, session.Options{Anonymous: anon, Version: "0.4", Extensions: []session.Extension{{Name: "operations", Version: "2"}}})
			if sign(t, s2, "GET", "https://api.example/x", "").hdr["kid"] != kid {
				t.Fatal("two Sessions of one User ID use different keys without rotation")
			}
		}
	}
}

// TestWarmSignRequestReadsNoSecrets: once warm, signing touches no keyring.
func TestWarmSignRequestReadsNoSecrets(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t, "https://auth.a.example", session.Options{})
	sign(t, s, "GET", "https://api.a.example/x", "") // warm-up: loads or creates the delegated key
	before := e.secrets.calls.Load()
	for range 50 {
		sign(t, s, "GET", "https://api.a.example/x", "tok")
	}
	if got := e.secrets.calls.Load() - before; got != 0 {
		t.Fatalf("warm SignRequest made %d Secrets calls, want 0", got)
	}
}

func TestDelegatedKeyRotation(t *testing.T) {
	kv := store.NewSecrets(store.NewMemoryKV())
	e := newEnv(t, kv)
	s := e.open(t, "https://auth.a.example", session.Options{})
	k1 := sign(t, s, "GET", "https://api.a.example/x", "").hdr["kid"]
	e.clock.Advance(10 * time.Hour) // 2 h left of 12 h: no rotation yet
	if sign(t, s, "GET", "https://api.a.example/x", "").hdr["kid"] != k1 {
		t.Fatal("rotated too early")
	}
	e.clock.Advance(61 * time.Minute) // < 1 h left: rotate
	r := sign(t, s, "GET", "https://api.a.example/x", "")
	k2 := r.hdr["kid"]
	if k2 == k1 {
		t.Fatal("delegated key not rotated before its delegation expires")
	}
	// The delegation of the new key is fresh.
	_, p, _, _ := jwsbb.SplitCompactString(r.hdr["poppy_dlg"].(string))
	raw, _ := base64.RawURLEncoding.DecodeString(string(p))
	var dc struct{ Iat, Exp int64 }
	_ = json.Unmarshal(raw, &dc)
	if now := e.clock.Now().Unix(); dc.Iat != now || dc.Exp != now+12*3600 {
		t.Fatalf("new delegation iat/exp = %d/%d", dc.Iat, dc.Exp)
	}
	// A restart picks up the persisted new key instead of making another.
	e2 := newEnv(t, kv)
	e2.clock.Advance(e.clock.Now().Sub(e2.clock.Now())) // the time the first run stopped at
	s2 := e2.open(t, "https://auth.a.example", session.Options{})
	if sign(t, s2, "GET", "https://api.a.example/x", "").hdr["kid"] != k2 {
		t.Fatal("persisted delegated key not reused after restart")
	}
	b, _ := kv.LoadCompany(context.Background(), "https://auth.a.example", "")
	if len(b.Delegated) != 2 {
		t.Fatalf("%d delegated keys stored, want the current and the unexpired previous one", len(b.Delegated))
	}
}

func TestSIDsNeverReusedAndVersionChangeStartsNewSession(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	s := e.open(t, "https://auth.a.example", session.Options{})
	if again := e.open(t, "https://auth.a.example", session.Options{}); again != s {
		t.Fatal("Open did not return the current Session")
	}
	seen := map[string]bool{s.SID: true}
	for range 100 {
		ns, err := e.mgr.Renew(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if seen[ns.SID] {
			t.Fatal("sid reused")
		}
		seen[ns.SID] = true
		s = ns
	}
	v2 := e.open(t, "https://auth.a.example", session.Options{Version: "0.5"})
	if v2 == s || seen[v2.SID] || v2.UserID() != s.UserID() {
		t.Fatal("a version change did not start a new Session for the same User")
	}
	req, _ := http.NewRequest("GET", "https://api.a.example/", nil)
	if err := s.SignRequest(ctx, req, ""); !errors.Is(err, session.ErrSessionReplaced) {
		t.Fatalf("replaced Session still signs: %v", err)
	}
	for _, bad := range []string{"http://a.example", "https://A.example", "https://a.example?x", "a.example"} {
		if _, err := e.mgr.Open(ctx, bad, session.Options{}); err == nil {
			t.Errorf("Open(%q) accepted a bad Company identifier", bad)
		}
	}
	if _, err := e.mgr.Open(ctx, "https://a.example", session.Options{Extensions: []session.Extension{{Name: "x", Version: "1"}, {Name: "x", Version: "2"}}}); err == nil {
		t.Error("two versions of one extension accepted")
	}
}

// BenchmarkSign compares minting a Session JWT (the whole warm SignRequest: claims, JSON,
// base64url, ES256, headers) with a bare ECDSA P-256 signature over an input of the same size.
func BenchmarkSign(b *testing.B) {
	e := newEnv(b, nil)
	s := e.open(b, "https://auth.shop.example", session.Options{Extensions: []session.Extension{{Name: "operations", Version: "2"}}})
	req, _ := http.NewRequest("POST", "https://api.shop.example/orders/ord_7Hk2/exchanges", nil)
	ctx := context.Background()
	if err := s.SignRequest(ctx, req, "at_eyJhbGciOiJSUzI1NiJ9.access-token-of-moderate-length"); err != nil {
		b.Fatal(err)
	}
	jwt := req.Header.Get("Poppy-Session")
	input := []byte(jwt[:strings.LastIndexByte(jwt, '.')])
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	benchratio.RunCPU(b, "session-jwt", "bare-ecdsa-p256", func(b *testing.B) {
		if err := s.SignRequest(ctx, req, "at_eyJhbGciOiJSUzI1NiJ9.access-token-of-moderate-length"); err != nil {
			b.Fatal(err)
		}
	}, func(b *testing.B) {
		h := sha256.Sum256(input)
		if _, err := ecdsa.SignASN1(rand.Reader, key, h[:]); err != nil {
			b.Fatal(err)
		}
	})
}

// TestConcurrentSigningAcrossRotation signs from many goroutines while the delegation nears its
// end; every JWT must carry a delegation valid at its iat (run with -race).
func TestConcurrentSigningAcrossRotation(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t, "https://auth.a.example", session.Options{})
	sign(t, s, "GET", "https://api.a.example/x", "")
	e.clock.Advance(11*time.Hour + 30*time.Minute)
	var wg sync.WaitGroup
	kids := make(chan string, 8*20)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				req, _ := http.NewRequest("GET", "https://api.a.example/x", nil)
				if err := s.SignRequest(context.Background(), req, ""); err != nil {
					t.Error(err)
					return
				}
				h, _, _, _ := jwsbb.SplitCompactString(req.Header.Get("Poppy-Session"))
				raw, _ := base64.RawURLEncoding.DecodeString(string(h))
				var hdr struct{ Kid string }
				_ = json.Unmarshal(raw, &hdr)
				kids <- hdr.Kid
			}
		}()
	}
	wg.Wait()
	close(kids)
	distinct := map[string]bool{}
	for k := range kids {
		distinct[k] = true
	}
	if len(distinct) != 1 {
		t.Fatalf("concurrent rotation produced %d delegated keys, want exactly one new key", len(distinct))
	}
}

// TestNoSigningAfterDelegationExpiry: if rotation fails, the current key is used until shortly
// before its delegation's exp, and never after (spec 5.2).
func TestNoSigningAfterDelegationExpiry(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t, "https://auth.a.example", session.Options{})
	k1 := sign(t, s, "GET", "https://api.a.example/x", "").hdr["kid"]
	e.secrets.fail.Store(true)
	e.clock.Advance(11*time.Hour + 30*time.Minute)
	if sign(t, s, "GET", "https://api.a.example/x", "").hdr["kid"] != k1 {
		t.Fatal("expected the current key while rotation fails")
	}
	e.clock.Advance(30*time.Minute - 10*time.Second) // 10 s before exp
	req, _ := http.NewRequest("GET", "https://api.a.example/x", nil)
	if err := s.SignRequest(context.Background(), req, ""); err == nil || !strings.Contains(err.Error(), "keyring locked") {
		t.Fatalf("signed with a delegation about to expire: %v", err)
	}
	e.secrets.fail.Store(false)
	if sign(t, s, "GET", "https://api.a.example/x", "").hdr["kid"] == k1 {
		t.Fatal("no new key once the keyring works again")
	}
}
