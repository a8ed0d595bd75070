package engine_test

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

	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkSignedRequestFloor measures a request through the engine's Client, the client the
// product sends every request with, with everything the product does per request switched on
// (the exchange log in the SQLite state file on disk, with what the Inspector keeps of it), against
// its floor: a plain net/http request to the same endpoint carrying the same headers (the Session
// JWT, and signed in the access token and DPoP proof, as the Company received them from the
// engine: the bytes any implementation sends and the Company reads) plus the ES256 signatures no
// implementation can skip. Every iteration runs each part once, in a rotating order
// (benchratio.Medians); x-floor is the engine's median over the sum of the floor's medians.
//
//   - signed-out: a Session JWT per request (spec 5.2); floor = plain + one signature;
//   - signed-in-dpop: a Session JWT, the account's per-service token looked up, and a DPoP proof
//     (RFC 9449 §7) per request; floor = plain + two signatures.
//
// After discovery and sign-in the Company's API host answers every request with a fixed body
// without verifying anything, so that both sides pay the same server time and the ratio compares
// the client side only.
func BenchmarkSignedRequestFloor(b *testing.B) {
	ctx := context.Background()
	f := newSignInFixture(b, true)
	f.SignIn(b, "bench", "orders:read")
	out, in := f.client(b, ""), f.client(b, "bench")
	url := f.s.URL(refcompany.ShopHost, "/api/orders")
	do := func(c *engine.Client) func() error {
		return func() error {
			resp, err := c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: url})
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		}
	}
	// Warm both: the Session, the service's resource and token, the connections.
	if _, err := get(b, f.s, out, "/api/products"); err != nil {
		b.Fatal(err)
	}
	if err := do(in)(); err != nil {
		b.Fatal(err)
	}
	ok := []byte(`{"orders":[]}`)
	f.s.AddHost(refcompany.ShopHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(ok)
	}))
	// What each Client sends: its headers as the Company received them (the Session JWT, and
	// signed in the access token and DPoP proof), and the signing input of its Session JWT, so
	// that the floor sends the same bytes and each bare signature hashes and signs as many bytes
	// as the engine's.
	type sent struct {
		header http.Header
		input  []byte
	}
	capture := func(c *engine.Client) sent {
		f.s.ResetRequests()
		if err := do(c)(); err != nil {
			b.Fatal(err)
		}
		reqs := f.sent("/api/orders")
		h := reqs[len(reqs)-1].Header.Clone()
		jwt := h.Get("Poppy-Session")
		return sent{header: h, input: []byte(jwt[:strings.LastIndexByte(jwt, '.')])}
	}
	outSent, inSent := capture(out), capture(in)
	plainClient := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: f.s.CA().Pool()},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.s.Port)))
		},
	}}
	// plain sends the Client's request as a plain net/http request with the same headers.
	plain := func(h http.Header) func() error {
		return func() error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			for k, vs := range h {
				if k != "Content-Length" && k != "Accept-Encoding" && k != "User-Agent" {
					req.Header[k] = vs
				}
			}
			resp, err := plainClient.Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			f.s.ResetRequests() // the Company records every request; keep its memory flat
			return resp.Body.Close()
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	sig := func(input []byte) func() error {
		return func() error {
			d := sha256.Sum256(input)
			_, err := ecdsa.SignASN1(rand.Reader, key, d[:])
			return err
		}
	}
	for _, c := range []struct {
		name   string
		client *engine.Client
		sent   sent
		sigs   int
	}{{"signed-out", out, outSent, 1}, {"signed-in-dpop", in, inSent, 2}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			med := benchratio.Medians(b, do(c.client), plain(c.sent.header), sig(c.sent.input))
			b.ReportMetric(med[0], "engine-ns/op")
			b.ReportMetric(med[1], "plain-ns/op")
			b.ReportMetric(float64(c.sigs)*med[2], "bare-sig-ns/op")
			b.ReportMetric(med[0]/(med[1]+float64(c.sigs)*med[2]), "x-floor")
			b.ReportMetric(0, "ns/op") // the sum of all parts, meaningless alone
		})
	}
}
