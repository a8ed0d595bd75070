package transport_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkSignedOutRequest compares, in the same run and against the same loopback TLS handler,
// a signed-out request through the engine (Session destinations check, a real Session JWT from
// agentcore/session, Poppy headers, the policy dialer, error handling) with a plain net/http
// request. Both keep connections alive. The handler does not verify the Session, so the numbers
// compare the client side only.
func BenchmarkSignedOutRequest(b *testing.B) {
	f := newFixture(b, func(c *transport.Config) { c.Observer = nil })
	f.discover(b)
	ok := []byte(`{"products":[]}`)
	f.s.AddHost(poppytest.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(ok) }))
	target := f.s.URL(poppytest.OtherHost, "/api/products")
	// The benchmark endpoint is a Session destination of its own.
	var db transport.DestinationsBuilder
	if err := db.Prefix(f.s.URL(poppytest.OtherHost, "/api")); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	do := func(c *transport.SessionClient) func(b *testing.B) {
		return func(b *testing.B) {
			resp, err := c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: target})
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	plain := plainClient(f.s)
	plainDo := func(b *testing.B) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		resp, err := plain.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c, err := f.tr.Session(transport.SessionConfig{Signer: f.sess, Destinations: db.Build(), Version: "0.4"})
	if err != nil {
		b.Fatal(err)
	}
	benchratio.Run(b, "engine", "plain-net-http", do(c), plainDo)
	stub := transport.SignerFunc(func(ctx context.Context, r *http.Request, tok string) error {
		r.Header.Set("Poppy-Session", "eyJ0eXAiOiJwb3BweS1zZXNzaW9uK2p3dCJ9.e30.c2ln")
		return nil
	})
	cs, err := f.tr.Session(transport.SessionConfig{Signer: stub, Destinations: db.Build(), Version: "0.4"})
	if err != nil {
		b.Fatal(err)
	}
	benchratio.Run(b, "engine-with-stub-signer", "plain-net-http", do(cs), plainDo)
}

// BenchmarkSignedOutRequestRealistic is BenchmarkSignedOutRequest with a handler that takes 1 ms,
// a small stand-in for the network and server time of a real Company (a loopback round trip
// without any server work is far shorter than any real one). The ES256 signature that spec 5.2
// requires for every request is a fixed cost of some tens of microseconds; this shows its share
// of a request that does any work.
func BenchmarkSignedOutRequestRealistic(b *testing.B) {
	f := newFixture(b, func(c *transport.Config) { c.Observer = nil })
	f.discover(b)
	ok := []byte(`{"products":[]}`)
	f.s.AddHost(poppytest.OtherHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond)
		w.Write(ok)
	}))
	target := f.s.URL(poppytest.OtherHost, "/api/products")
	var db transport.DestinationsBuilder
	if err := db.Prefix(f.s.URL(poppytest.OtherHost, "/api")); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c, err := f.tr.Session(transport.SessionConfig{Signer: f.sess, Destinations: db.Build(), Version: "0.4"})
	if err != nil {
		b.Fatal(err)
	}
	plain := plainClient(f.s)
	benchratio.Run(b, "engine", "plain-net-http", func(b *testing.B) {
		resp, err := c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: target})
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}, func(b *testing.B) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		resp, err := plain.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
}

// plainClient is the baseline: a bare net/http client (keep-alive, HTTP/1.1) that trusts the
// reference Company's CA and dials its loopback listener, with none of the engine's checks.
func plainClient(s *poppytest.Server) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: s.CA().Pool(), ServerName: poppytest.OtherHost},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
		},
	}}
}
