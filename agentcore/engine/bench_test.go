package engine_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/session"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkClientDo measures a signed request over loopback TLS to the reference Company
// through the engine's Client (signed out, and signed in with the token read from the secret
// store), against the baseline of a bare transport.SessionClient without exchange log, in the
// same run. The difference is the engine's overhead per request: the keyring bundle read (from
// the store's cache), the exchange log hand-off, and redaction for the inspector.
func BenchmarkClientDo(b *testing.B) {
	f := newFixture(b, options{})
	ctx := context.Background()
	c, err := f.e.Discover(ctx, f.s.Domain)
	if err != nil {
		b.Fatal(err)
	}
	f.s.AddAccessToken("bench-token", f.e.Agent().ClientID(), "orders:read")
	if _, err := f.secrets.UpdateCompany(ctx, c.Identifier, "bench", func(bd *store.CompanyBundle) error {
		bd.Tokens = []store.Token{{AccessToken: "bench-token"}}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	// Baseline: the same Session signing and transport, without the engine.
	tr, err := transport.New(f.s.ClientConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	m, err := session.NewManager(session.Config{Secrets: store.NewSecrets(store.NewMemoryKV()), Delegator: f.e.Agent()})
	if err != nil {
		b.Fatal(err)
	}
	sess, err := m.Open(ctx, c.Identifier, session.Options{Version: c.Version})
	if err != nil {
		b.Fatal(err)
	}
	dest, _ := c.SessionDestinations()
	bare, err := tr.Session(transport.SessionConfig{Signer: sess, Destinations: dest, Version: c.Version})
	if err != nil {
		b.Fatal(err)
	}
	out, err := f.e.Client(ctx, c.Identifier, "")
	if err != nil {
		b.Fatal(err)
	}
	in, err := f.e.Client(ctx, c.Identifier, "bench")
	if err != nil {
		b.Fatal(err)
	}
	products := f.s.URL(refcompany.ShopHost, "/api/products")
	orders := f.s.URL(refcompany.ShopHost, "/api/orders")
	op := func(do func(*transport.Request) (*transport.Response, error), url, token string) func(b *testing.B) {
		return func(b *testing.B) {
			resp, err := do(&transport.Request{Method: http.MethodGet, URL: url, AccessToken: token})
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			f.s.ResetRequests()
		}
	}
	benchratio.Run(b, "engine.Client/signed-out", "transport.SessionClient",
		op(func(r *transport.Request) (*transport.Response, error) { return out.Do(ctx, r) }, products, ""),
		op(func(r *transport.Request) (*transport.Response, error) { return bare.Do(ctx, r) }, products, ""))
	benchratio.Run(b, "engine.Client/signed-in", "transport.SessionClient",
		op(func(r *transport.Request) (*transport.Response, error) { return in.Do(ctx, r) }, orders, ""),
		op(func(r *transport.Request) (*transport.Response, error) { return bare.Do(ctx, r) }, orders, "bench-token"))
}
