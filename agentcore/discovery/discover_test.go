package discovery_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

type env struct {
	s     *refcompany.Server
	tr    *transport.Transport
	d     *discovery.Discoverer
	clk   *refcompany.Clock
	known *discovery.MemoryKnown
}

func newEnv(t *testing.T, faults ...string) *env {
	t.Helper()
	s := poppytest.Start(t, refcompany.Options{Faults: faults})
	tr := poppytest.Transport(t, s, nil)
	e := &env{s: s, tr: tr, clk: refcompany.NewFrozenClock(time.Now()), known: discovery.NewMemoryKnown()}
	var err error
	e.d, err = discovery.New(discovery.Config{Transport: tr, Now: e.clk.Now, Known: e.known})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDiscoverReferenceCompany(t *testing.T) {
	e := newEnv(t)
	c, err := e.d.Discover(context.Background(), e.s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	if c.Identifier != e.s.Issuer() || c.Issuer != e.s.Issuer() || c.Version != "0.4" || c.Organization.Domain != e.s.Domain {
		t.Fatalf("Company = %+v", c)
	}
	if !c.SignIn.Offered || !c.SignIn.Direct || !c.SignIn.Device || c.AuthorizationServer.TokenEndpoint != e.s.Issuer()+"/oauth/token" {
		t.Fatalf("SignIn = %+v", c.SignIn)
	}
	if ops := c.Extensions["operations"]; len(ops) != 1 || ops[0].Version != "2" {
		t.Fatalf("extensions = %+v", c.Extensions)
	}
	if gw := c.Extensions["shop.localhost/gift-wrap"]; len(gw) != 1 || gw[0].Endpoint() != e.s.Origin()+"/poppy/gift-wrap" {
		t.Fatalf("gift-wrap = %+v", gw)
	}
	if len(c.Scopes) != 2 || c.Scopes[1].Name != "orders:write" || c.Scopes[1].Changes != "irreversible" || !*c.Scopes[1].PersonalData {
		t.Fatalf("scopes = %+v", c.Scopes)
	}
	if len(c.Channels.APIs) != 2 || c.Channels.Web == nil || c.Channels.Agent == nil {
		t.Fatalf("channels = %+v", c.Channels)
	}
	// Discovery requests carry no Session header and no credentials (spec 3.4, 5.2).
	for _, r := range e.s.Requests() {
		for _, h := range []string{"Poppy-Session", "Poppy-Version", "Poppy-Extensions", "Authorization", "Cookie"} {
			if r.Header.Get(h) != "" {
				t.Errorf("%s %s carried %s", r.Method, r.Path, h)
			}
		}
	}
}

// TestFaults: each named fault of the reference Company gives the check and section it breaks.
func TestFaults(t *testing.T) {
	tests := []struct {
		fault, check, section string
	}{
		{refcompany.FaultRedirectOtherPath, discovery.CheckFinalURL, "3"},
		{refcompany.FaultDomainMismatch, discovery.CheckOrganizationDomain, "3, 3.1"},
		{refcompany.FaultIssuerNotListingDomain, discovery.CheckProtectedResources, "3.2"},
		{refcompany.FaultIssuerMismatch, discovery.CheckIssuerMatch, "3.2"},
		{refcompany.FaultVersionMismatch, discovery.CheckVersion, "3.4"},
	}
	for _, tc := range tests {
		t.Run(tc.fault, func(t *testing.T) {
			e := newEnv(t, tc.fault)
			_, err := e.d.Discover(context.Background(), e.s.Domain)
			ce, ok := discovery.AsCheckError(err)
			if !ok || ce.Check != tc.check || ce.Section != tc.section || !strings.Contains(err.Error(), "spec "+tc.section) {
				t.Fatalf("err = %v, want check %q (spec %s)", err, tc.check, tc.section)
			}
			// A document that failed its own checks is not used: discovery goes no further.
			stopsEarly := tc.fault == refcompany.FaultRedirectOtherPath || tc.fault == refcompany.FaultDomainMismatch || tc.fault == refcompany.FaultVersionMismatch
			if stopsEarly && len(e.s.RequestsTo("", "/.well-known/oauth-protected-resource")) != 0 {
				t.Fatal("discovery went on with a document it must not use")
			}
			if len(e.s.RequestsTo(refcompany.ShopHost, "/api/products")) != 0 || len(e.s.RequestsTo(refcompany.AgentHost, "")) != 0 {
				t.Fatal("discovery reached an API or the agent host")
			}
		})
	}
}

func TestRedirects(t *testing.T) {
	t.Run("www redirects to the apex: the final host speaks", func(t *testing.T) {
		e := newEnv(t)
		c, err := e.d.Discover(context.Background(), e.s.URL(refcompany.WWWHost, "")[len("https://"):])
		if err != nil {
			t.Fatal(err)
		}
		if c.Organization.Domain != e.s.Domain || c.PoppyJSONURL != e.s.PoppyJSONURL() {
			t.Fatalf("Company = %+v", c)
		}
	})
	for _, tc := range []struct{ name, location, want string }{
		{"to http", "http://shop.localhost/.well-known/poppy.json", "non-HTTPS"},
		{"to a query", "/.well-known/poppy.json?x=1", discovery.CheckFinalURL},
		{"to a loopback address", "https://127.0.0.1/.well-known/poppy.json", "loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			loc := tc.location
			if strings.HasPrefix(loc, "/") {
				loc = e.s.URL(refcompany.ShopHost, loc)
			}
			e.s.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.RawQuery != "" {
					http.Error(w, "no", 500)
					return
				}
				http.Redirect(w, r, loc, http.StatusFound)
			}))
			_, err := e.d.Discover(context.Background(), e.s.URL(refcompany.OtherHost, "")[len("https://"):])
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSupportedVersions(t *testing.T) {
	e := newEnv(t)
	e.s.SetMainVersion("0.5")
	c, err := e.d.Discover(context.Background(), e.s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != "0.4" || c.DocumentURL != e.s.Origin()+"/poppy/0.4.json" || c.Document.ProtocolVersion != "0.4" {
		t.Fatalf("chose %s at %s", c.Version, c.DocumentURL)
	}
	bad := []struct {
		name string
		edit func(doc map[string]any)
	}{
		{"other host", func(doc map[string]any) {
			if sv, ok := doc["supported_versions"].(map[string]any); ok && sv["0.4"] != nil {
				sv["0.4"] = e.s.URL(refcompany.OtherHost, "/poppy/0.4.json")
			}
		}},
		{"version document lists supported_versions", func(doc map[string]any) {
			if doc["protocol_version"] == "0.4" {
				doc["supported_versions"] = map[string]any{}
			}
		}},
		{"version document has another protocol_version", func(doc map[string]any) {
			if doc["protocol_version"] == "0.4" {
				doc["protocol_version"] = "0.3"
			}
		}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			e.s.EditPoppyJSON(tc.edit)
			defer e.s.EditPoppyJSON(nil)
			_, err := e.d.Discover(context.Background(), e.s.Domain, discovery.NoCache())
			if ce, ok := discovery.AsCheckError(err); !ok || ce.Check != discovery.CheckVersionDocument {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestIssuerRules(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(e *env)
		check    string // "" = success
		wantID   func(e *env) string
		signedIn bool
	}{
		{"404 means no issuer", func(e *env) { e.s.SetIssuerMode(refcompany.IssuerNone404) }, "", func(e *env) string { return e.s.Origin() }, false},
		{"empty authorization_servers means no issuer", func(e *env) { e.s.SetIssuerMode(refcompany.IssuerNoneEmpty) }, "", func(e *env) string { return e.s.Origin() }, false},
		{"500 never falls back", func(e *env) { e.s.SetIssuerMode(refcompany.IssuerError500) }, discovery.CheckResourceMetadata, nil, false},
		{"no issuer but auth.issuer present", func(e *env) {
			e.s.SetIssuerMode(refcompany.IssuerNone404)
			e.s.EditPoppyJSON(func(d map[string]any) { d["auth"].(map[string]any)["issuer"] = e.s.Issuer() })
		}, discovery.CheckIssuerSelection, nil, false},
		{"no issuer but signed_in access", func(e *env) {
			e.s.SetIssuerMode(refcompany.IssuerNone404)
			e.s.EditPoppyJSON(func(d map[string]any) {
				d["agent"].(map[string]any)["protocols"].([]any)[0].(map[string]any)["access"] = "signed_in"
			})
		}, discovery.CheckSignInConfiguration, nil, false},
		{"resource not exactly the domain", func(e *env) {
			e.s.EditResourceMetadata(func(d map[string]any) { d["resource"] = e.s.Origin() + "/" })
		}, discovery.CheckResourceMetadata, nil, false},
		{"invalid metadata never falls back", func(e *env) {
			e.s.EditResourceMetadata(func(d map[string]any) { delete(d, "resource") })
		}, discovery.CheckResourceMetadata, nil, false},
		{"several servers without auth.issuer", func(e *env) {
			e.s.EditResourceMetadata(func(d map[string]any) { d["authorization_servers"] = []any{"https://staff.example", e.s.Issuer()} })
			e.s.EditPoppyJSON(func(d map[string]any) { delete(d["auth"].(map[string]any), "issuer") })
		}, discovery.CheckIssuerSelection, nil, false},
		{"several servers, auth.issuer names one", func(e *env) {
			e.s.EditResourceMetadata(func(d map[string]any) { d["authorization_servers"] = []any{"https://staff.example", e.s.Issuer()} })
		}, "", func(e *env) string { return e.s.Issuer() }, true},
		{"one server, auth.issuer names another", func(e *env) {
			e.s.EditPoppyJSON(func(d map[string]any) { d["auth"].(map[string]any)["issuer"] = "https://staff.example" })
		}, discovery.CheckIssuerSelection, nil, false},
		{"auth.disabled: identifier is still the issuer, no sign-in", func(e *env) {
			e.s.EditPoppyJSON(func(d map[string]any) { d["auth"].(map[string]any)["disabled"] = true })
		}, "", func(e *env) string { return e.s.Issuer() }, false},
		{"no revocation_endpoint", func(e *env) { e.s.EditASMetadata(func(d map[string]any) { delete(d, "revocation_endpoint") }) }, discovery.CheckASMetadata, nil, false},
		{"no refresh_token grant", func(e *env) {
			e.s.EditASMetadata(func(d map[string]any) { d["grant_types_supported"] = []any{"authorization_code"} })
		}, discovery.CheckASMetadata, nil, false},
		{"authorization_code without authorization_endpoint", func(e *env) {
			e.s.EditASMetadata(func(d map[string]any) { delete(d, "authorization_endpoint") })
		}, discovery.CheckASMetadata, nil, false},
		{"device grant without device endpoint", func(e *env) {
			e.s.EditASMetadata(func(d map[string]any) { delete(d, "device_authorization_endpoint") })
		}, discovery.CheckASMetadata, nil, false},
		{"protected_resources with uppercase host matches", func(e *env) {
			e.s.EditASMetadata(func(d map[string]any) { d["protected_resources"] = []any{"https://SHOP.localhost:" + itoa(e.s.Port)} })
		}, "", func(e *env) string { return e.s.Issuer() }, true},
		{"protected_resources with a trailing slash does not match", func(e *env) {
			e.s.EditASMetadata(func(d map[string]any) { d["protected_resources"] = []any{e.s.Origin() + "/"} })
		}, discovery.CheckProtectedResources, nil, false},
		{"http token endpoint", func(e *env) {
			e.s.EditASMetadata(func(d map[string]any) { d["token_endpoint"] = "http://auth.shop.localhost/token" })
		}, discovery.CheckHTTPS, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tc.setup(e)
			c, err := e.d.Discover(context.Background(), e.s.Domain)
			if tc.check != "" {
				if ce, ok := discovery.AsCheckError(err); !ok || ce.Check != tc.check {
					t.Fatalf("err = %v, want check %q", err, tc.check)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Identifier != tc.wantID(e) || c.SignIn.Offered != tc.signedIn {
				t.Fatalf("identifier %s, sign-in %+v", c.Identifier, c.SignIn)
			}
		})
	}
}

// TestKnownIssuer: no fallback to "no issuer" for a Company whose issuer is known, unless a
// successful discovery establishes that it was removed (spec 3.2).
func TestKnownIssuer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.d.Discover(ctx, e.s.Domain); err != nil {
		t.Fatal(err)
	}
	e.s.SetIssuerMode(refcompany.IssuerNone404)
	_, err := e.d.Discover(ctx, e.s.Domain, discovery.NoCache())
	if ce, ok := discovery.AsCheckError(err); !ok || ce.Check != discovery.CheckKnownIssuer {
		t.Fatalf("404 for a known issuer: err = %v", err)
	}
	e.s.SetIssuerMode(refcompany.IssuerNoneEmpty)
	c, err := e.d.Discover(ctx, e.s.Domain, discovery.NoCache())
	if err != nil {
		t.Fatal(err)
	}
	if !c.IssuerRemoved || c.Identifier != e.s.Origin() {
		t.Fatalf("removal not reported: %+v", c)
	}
	e.s.SetIssuerMode(refcompany.IssuerNone404)
	if _, err := e.d.Discover(ctx, e.s.Domain, discovery.NoCache()); err != nil {
		t.Fatalf("after an established removal, 404 is fine: %v", err)
	}
}

// TestCache: a fresh Company costs no network; stale documents are revalidated with ETag;
// no-store is never reused; NoCache fetches again (RFC 9111, spec 3.4).
func TestCache(t *testing.T) {
	ctx := context.Background()
	t.Run("fresh: no network", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.d.Discover(ctx, e.s.Domain); err != nil {
			t.Fatal(err)
		}
		n := len(e.s.Requests())
		if _, err := e.d.Discover(ctx, e.s.Domain); err != nil {
			t.Fatal(err)
		}
		if got := len(e.s.Requests()); got != n {
			t.Fatalf("repeat discovery sent %d requests", got-n)
		}
		if _, err := e.d.Discover(ctx, e.s.Domain, discovery.NoCache()); err != nil {
			t.Fatal(err)
		}
		if got := len(e.s.Requests()); got != 2*n {
			t.Fatalf("NoCache sent %d requests, want %d", got-n, n)
		}
	})
	t.Run("stale: revalidated with If-None-Match", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.d.Discover(ctx, e.s.Domain); err != nil {
			t.Fatal(err)
		}
		e.s.ResetRequests()
		e.clk.Advance(301 * time.Second) // past max-age=300
		if _, err := e.d.Discover(ctx, e.s.Domain); err != nil {
			t.Fatal(err)
		}
		reqs := e.s.Requests()
		if len(reqs) == 0 {
			t.Fatal("stale documents were used without revalidation")
		}
		for _, r := range reqs {
			if r.Header.Get("If-None-Match") == "" {
				t.Fatalf("%s revalidated without If-None-Match", r.Path)
			}
		}
		e.s.ResetRequests()
		if _, err := e.d.Discover(ctx, e.s.Domain); err != nil {
			t.Fatal(err)
		}
		if len(e.s.Requests()) != 0 {
			t.Fatal("a 304 did not refresh the entries")
		}
	})
	for _, cc := range []string{"no-store", "no-cache", "max-age=0"} {
		t.Run(cc, func(t *testing.T) {
			e := newEnv(t)
			e.s.SetCacheControl(cc)
			e.d.Discover(ctx, e.s.Domain)
			e.s.ResetRequests()
			if _, err := e.d.Discover(ctx, e.s.Domain); err != nil {
				t.Fatal(err)
			}
			reqs := e.s.RequestsTo(refcompany.ShopHost, "/.well-known/poppy.json")
			if len(reqs) != 1 {
				t.Fatalf("poppy.json fetched %d times", len(reqs))
			}
			if hasINM := reqs[0].Header.Get("If-None-Match") != ""; hasINM == (cc == "no-store") {
				t.Fatalf("If-None-Match sent = %v with %s", hasINM, cc)
			}
		})
	}
}

func TestDomainInput(t *testing.T) {
	e := newEnv(t)
	for _, in := range []string{"", "https://shop.localhost", "shop.localhost/path", "a b"} {
		_, err := e.d.Discover(context.Background(), in)
		if ce, ok := discovery.AsCheckError(err); !ok || ce.Check != discovery.CheckDomain {
			t.Errorf("Discover(%q) err = %v", in, err)
		}
	}
	var ae *transport.AddressError
	_, err := e.d.Discover(context.Background(), "127.0.0.1:"+itoa(e.s.Port))
	if !errors.As(err, &ae) {
		t.Fatalf("loopback literal: err = %v", err)
	}
}

// TestNotModifiedWithoutValidator: a server that answers 304 to every request gets asked at most
// twice (once with the cached validator or none, once without), never in a loop (RFC 9110
// §15.4.5).
func TestNotModifiedWithoutValidator(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []discovery.Option
	}{
		{name: "cache miss"},
		{name: "no cache", opts: []discovery.Option{discovery.NoCache()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var mu sync.Mutex
			n := 0
			e.s.AddHost(refcompany.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				served := n
				mu.Unlock()
				if served > 50 { // ends the loop this test guards against, so it fails instead of hanging
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(http.StatusNotModified)
			}))
			_, err := e.d.Discover(context.Background(), refcompany.OtherHost+":"+itoa(e.s.Port), tc.opts...)
			mu.Lock()
			defer mu.Unlock()
			if err == nil || n > 2 {
				t.Fatalf("Discover = %v after %d requests; want an error after at most 2", err, n)
			}
		})
	}
}

// countingKnown is a KnownStore that counts its writes.
type countingKnown struct {
	*discovery.MemoryKnown
	sets int
}

func (k *countingKnown) SetIssuer(ctx context.Context, domain, issuer string) error {
	k.sets++
	return k.MemoryKnown.SetIssuer(ctx, domain, issuer)
}

// TestKnownIssuerRecordedWhenItChanges: discovery records a Company's issuer (spec 3.2) the first
// time and when it changes, not on every discovery (each tool call naming a Company discovers
// it again, from the cache).
func TestKnownIssuerRecordedWhenItChanges(t *testing.T) {
	e := newEnv(t)
	known := &countingKnown{MemoryKnown: discovery.NewMemoryKnown()}
	d, err := discovery.New(discovery.Config{Transport: e.tr, Now: e.clk.Now, Known: known})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		if _, err := d.Discover(ctx, e.s.Domain); err != nil {
			t.Fatal(err)
		}
	}
	if is, ok, _ := known.KnownIssuer(ctx, e.s.Domain); !ok || is != e.s.Issuer() || known.sets != 1 {
		t.Fatalf("known issuer %q (%v) after %d writes; want %q written once", is, ok, known.sets, e.s.Issuer())
	}
	if err := known.MemoryKnown.SetIssuer(ctx, e.s.Domain, "https://old-issuer.example"); err != nil {
		t.Fatal(err)
	}
	c, err := d.Discover(ctx, e.s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	if is, _, _ := known.KnownIssuer(ctx, e.s.Domain); is != e.s.Issuer() || known.sets != 2 || c.Issuer != e.s.Issuer() {
		t.Fatalf("after the issuer changed: known %q, %d writes, Company issuer %q", is, known.sets, c.Issuer)
	}
}
