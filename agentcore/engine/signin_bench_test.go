package engine_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkSignedInDo measures a signed-in GET /api/orders over loopback TLS through the
// engine's Client of the Host (the sign-in layer engine.New builds), against the baseline of the same
// Client with the token given in the request (no lookup, Bearer), in the same run:
//   - oauth/bearer adds the per-service token lookup (resource cache, keyring bundle);
//   - oauth/dpop adds a DPoP proof per request (ES256 signature) and its verification at the
//     reference Company (RFC 9449 §7).
func BenchmarkSignedInDo(b *testing.B) {
	ctx := context.Background()
	ops := map[bool]func(b *testing.B){}
	var baseline func(b *testing.B)
	for _, dpop := range []bool{false, true} {
		f := newSignInFixture(b, dpop)
		f.SignIn(b, "bench", "orders:read")
		c := f.client(b, "bench")
		url := f.s.URL(refcompany.ShopHost, "/api/orders")
		op := func(token string) func(b *testing.B) {
			return func(b *testing.B) {
				resp, err := c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: url, AccessToken: token})
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				f.s.ResetRequests()
			}
		}
		ops[dpop] = op("")
		if !dpop {
			// The baseline's token: the one the sign-in stored (Bearer).
			resp, err := c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: url})
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			baseline = op(resp.AccessToken)
		}
	}
	benchratio.Run(b, "oauth/bearer", "token-in-request", ops[false], baseline)
	benchratio.Run(b, "oauth/dpop", "token-in-request", ops[true], baseline)
}
