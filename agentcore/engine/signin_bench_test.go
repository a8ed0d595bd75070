package engine_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// BenchmarkSignedInDo measures a signed-in GET /api/orders over loopback TLS through the
// engine's Client of the Host (the sign-in layer engine.New builds), against the baseline of the same
// Client with the token given in the request (no lookup, Bearer), in the same run:
//   - oauth/bearer adds the per-service token lookup (resource cache, keyring bundle);
//   - oauth/dpop adds a DPoP proof per request (ES256 signature) and its verification at the
//     reference Company (RFC 9449 §7).
func BenchmarkSignedInDo(b *testing.B) {
	ctx := context.Background()
	for _, dpop := range []bool{false, true} {
		f := newSignInFixture(b, dpop)
		f.SignIn(b, "bench", "orders:read")
		c := f.client(b, "bench")
		url := f.s.URL(poppytest.ShopHost, "/api/orders")
		tok := ""
		if !dpop {
			// The baseline's token: the one the sign-in stored (Bearer).
			resp, err := c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: url})
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			tok = resp.AccessToken
		}
		run := func(b *testing.B, token string) {
			for b.Loop() {
				resp, err := c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: url, AccessToken: token})
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			f.s.ResetRequests()
		}
		if !dpop {
			b.Run("baseline=token-in-request/bearer", func(b *testing.B) { run(b, tok) })
			b.Run("oauth/bearer", func(b *testing.B) { run(b, "") })
		} else {
			b.Run("oauth/dpop", func(b *testing.B) { run(b, "") })
		}
	}
}
