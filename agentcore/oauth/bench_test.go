package oauth_test

import (
	"context"
	"io"
	"testing"

	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkRefresh measures a refresh over loopback TLS (client assertion, the reference
// Company's assertion verification, rotation stored atomically) against the baseline of a plain
// GET of the issuer's metadata on the same connection pool, by CPU time with the collector run
// between turns (benchratio.RunCPUCollected: the refresh waits for the keyring, whose idle time
// a collection's mark workers take).
func BenchmarkRefresh(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	ctx := context.Background()
	f.signIn(b, "personal", []string{"orders:read"})
	benchratio.RunCPUCollected(b, "refresh", "metadata-get", func(b *testing.B) {
		if _, err := f.c.Refresh(ctx, f.co, "personal", ""); err != nil {
			b.Fatal(err)
		}
	}, func(b *testing.B) {
		resp, err := f.tr.NoRedirectClient().Get(f.s.Issuer() + "/.well-known/oauth-authorization-server")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
}
