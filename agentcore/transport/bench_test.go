package transport_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkSignedOutRequest measures a signed-out request through the engine against its floor,
// interleaved: every iteration runs each variant once, in a rotating order, so that load from
// other processes on the machine hits all of them alike. The variants, against the same loopback
// TLS handler (connections kept alive; the handler does not verify the Session, so the numbers
// compare the client side only):
//
//   - engine: SessionClient.Do with a real Session JWT from agentcore/session (Session
//     destinations check, Poppy headers, the policy dialer, error handling);
//   - plain: a bare net/http request;
//   - bare-sig: one ECDSA P-256 signature (crypto/ecdsa SignASN1 over a SHA-256 digest of a real
//     Session JWT's signing input), the one signature spec 5.2 requires per request;
//   - stub: the engine with a signer that only sets the header, so engine minus stub is the
//     signer's cost and stub minus plain the transport's.
//
// Each metric is the median of the variant's per-iteration times, which a burst of load on the
// machine moves less than a mean. x-floor is engine / (plain + bare-sig), of those medians: the
// engine's cost over the least any implementation of spec 5.2 can spend on the same request.
func BenchmarkSignedOutRequest(b *testing.B) {
	f := newFixture(b, func(c *transport.Config) { c.Observer = nil })
	f.discover(b)
	ok := []byte(`{"products":[]}`)
	target, port := benchTarget(b, f.s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(ok) }))
	// The benchmark endpoint is a Session destination of its own.
	var db transport.DestinationsBuilder
	if err := db.Prefix(strings.TrimSuffix(target, "/products")); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	engine, err := f.tr.Session(transport.SessionConfig{Signer: f.sess, Destinations: db.Build(), Version: "0.4"})
	if err != nil {
		b.Fatal(err)
	}
	stub, err := f.tr.Session(transport.SessionConfig{Signer: transport.SignerFunc(func(ctx context.Context, r *http.Request, tok string) error {
		r.Header.Set("Poppy-Session", "eyJ0eXAiOiJwb3BweS1zZXNzaW9uK2p3dCJ9.e30.c2ln")
		return nil
	}), Destinations: db.Build(), Version: "0.4"})
	if err != nil {
		b.Fatal(err)
	}
	plain := plainClient(f.s, port)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	// The signing input of a real Session JWT for this request (header with the delegation,
	// claims): the bare signature hashes and signs as many bytes as the engine's.
	var input []byte
	{
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err := f.sess.SignRequest(ctx, r, ""); err != nil {
			b.Fatal(err)
		}
		jwt := r.Header.Get("Poppy-Session")
		input = []byte(jwt[:strings.LastIndexByte(jwt, '.')])
	}
	variants := []func() error{
		func() error { return drainDo(engine.Do(ctx, &transport.Request{Method: http.MethodGet, URL: target})) },
		func() error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			resp, err := plain.Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		},
		func() error {
			d := sha256.Sum256(input)
			_, err := ecdsa.SignASN1(rand.Reader, key, d[:])
			return err
		},
		func() error { return drainDo(stub.Do(ctx, &transport.Request{Method: http.MethodGet, URL: target})) },
	}
	names := []string{"engine-ns/op", "plain-ns/op", "bare-sig-ns/op", "stub-ns/op"}
	b.ReportAllocs()
	med := benchratio.Medians(b, variants...)
	for k, name := range names {
		b.ReportMetric(med[k], name)
	}
	b.ReportMetric(med[0]/(med[1]+med[2]), "x-floor")
	b.ReportMetric(0, "ns/op") // the sum of all variants, meaningless alone
}

func drainDo(resp *transport.Response, err error) error {
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// BenchmarkSignedOutRequestAllocs shows the allocations of one signed-out request through the
// engine and through plain net/http (the timings of BenchmarkSignedOutRequest are the ones to
// compare; these run one after the other).
func BenchmarkSignedOutRequestAllocs(b *testing.B) {
	f := newFixture(b, func(c *transport.Config) { c.Observer = nil })
	f.discover(b)
	ok := []byte(`{"products":[]}`)
	target, port := benchTarget(b, f.s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(ok) }))
	var db transport.DestinationsBuilder
	if err := db.Prefix(strings.TrimSuffix(target, "/products")); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("engine", func(b *testing.B) {
		c, err := f.tr.Session(transport.SessionConfig{Signer: f.sess, Destinations: db.Build(), Version: "0.4"})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := drainDo(c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: target})); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain-net-http", func(b *testing.B) {
		plain := plainClient(f.s, port)
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			resp, err := plain.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
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
	target, port := benchTarget(b, f.s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond)
		w.Write(ok)
	}))
	var db transport.DestinationsBuilder
	if err := db.Prefix(strings.TrimSuffix(target, "/products")); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c, err := f.tr.Session(transport.SessionConfig{Signer: f.sess, Destinations: db.Build(), Version: "0.4"})
	if err != nil {
		b.Fatal(err)
	}
	plain := plainClient(f.s, port)
	benchratio.Run(b, "engine", "plain-net-http", func(b *testing.B) {
		if err := drainDo(c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: target})); err != nil {
			b.Fatal(err)
		}
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

// benchTarget serves ok on its own loopback TLS listener, with a certificate the reference
// Company's CA issued for OtherHost (so the engine's dev-mode transport trusts it), and returns
// the URL of /api/products there and the listener's port. It is not the reference Company,
// which records every request it gets (headers and body, for tests to inspect): that server
// work grows with the Session header and is not the client's.
func benchTarget(b *testing.B, s *refcompany.Server, h http.Handler) (string, int) {
	b.Helper()
	leaf, err := s.CA().Leaf(time.Now(), refcompany.OtherHost)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}))
	b.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	return "https://" + refcompany.OtherHost + ":" + strconv.Itoa(port) + "/api/products", port
}

// plainClient is the baseline: a bare net/http client (keep-alive, HTTP/1.1) that trusts the
// reference Company's CA and dials its loopback listener, with none of the engine's checks.
func plainClient(s *refcompany.Server, port int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: s.CA().Pool(), ServerName: refcompany.OtherHost},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		},
	}}
}
