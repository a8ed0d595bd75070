package operator_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/operator"
)

// clientFrom is an HTTPS client of inst whose connections leave from the loopback address src
// (Linux routes all of 127.0.0.0/8 to lo, so each address is a distinct source to the server).
func clientFrom(t testing.TB, inst *instance, src string) *http.Client {
	t.Helper()
	base := inst.client.Transport.(*http.Transport)
	tr := base.Clone()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	tr.DialContext = d.DialContext
	tr.TLSClientConfig = base.TLSClientConfig.Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// enrollResults enrolls n devices at once through client and sorts the outcomes.
func enrollResults(t *testing.T, inst *instance, client *http.Client, n int) (ok int, limited []*identity.EnrollLimitError) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := identity.Enroll(context.Background(), client, inst.url, "", nil)
			mu.Lock()
			defer mu.Unlock()
			var le *identity.EnrollLimitError
			switch {
			case err == nil:
				ok++
			case errors.As(err, &le):
				limited = append(limited, le)
			default:
				t.Errorf("an enrollment failed otherwise: %v", err)
			}
		}()
	}
	wg.Wait()
	return ok, limited
}

// TestOpenEnrollmentFlood: an open operator (3 devices an hour per address, 6 per network, 50
// in all, a proof of work of 12 bits) is flooded from 127.0.0.2 while a device at 127.1.0.5,
// another /24, enrolls: the flood gets its address's 3 and then words that say why and when,
// a second address in the flood's network gets the network's remaining 3, and the other
// device enrolls during and after the flood. The refusals counted nothing against the
// operator's overall cap. The sources are told apart by binding each client's connections to
// its own loopback address.
func TestOpenEnrollmentFlood(t *testing.T) {
	inst := startOperator(t, opts{enrollment: identity.EnrollmentOpen, edit: func(c *operator.Config) {
		c.EnrollPerAddress, c.EnrollPerNetwork, c.OpenEnrollPerHour, c.EnrollPoWBits = 3, 6, 50, 12
	}}, "")
	flood, neighbour, other := clientFrom(t, inst, "127.0.0.2"), clientFrom(t, inst, "127.0.0.3"), clientFrom(t, inst, "127.1.0.5")

	var floodOK int
	var floodLimited []*identity.EnrollLimitError
	done := make(chan struct{})
	go func() {
		defer close(done)
		floodOK, floodLimited = enrollResults(t, inst, flood, 30)
	}()
	if _, err := identity.Enroll(context.Background(), other, inst.url, "", nil); err != nil {
		t.Fatalf("a device in another network could not enroll during the flood: %v", err)
	}
	<-done
	if floodOK != 3 || len(floodLimited) != 27 {
		t.Fatalf("the flood enrolled %d and was refused %d times; want 3 and 27", floodOK, len(floodLimited))
	}
	msg := floodLimited[0].Error()
	for _, want := range []string{"is not enrolling more devices from here for now", "at most 3 devices an hour from one address", "127.0.0.2", "ask again after", "from another network"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the flood's refusal %q does not say %q", msg, want)
		}
	}
	if ra := floodLimited[0].RetryAfter; ra <= 0 || ra > time.Hour {
		t.Errorf("the flood's refusal says to wait %v", ra)
	}
	nOK, nLimited := enrollResults(t, inst, neighbour, 10)
	if nOK != 3 || len(nLimited) != 7 || !strings.Contains(nLimited[0].Error(), "at most 6 devices an hour from one network, and yours (127.0.0.0/24)") {
		t.Fatalf("the flood's neighbour enrolled %d, refused %d (%v); want 3 and 7, refused for the network", nOK, len(nLimited), nLimited)
	}
	for i := range 2 {
		if _, err := identity.Enroll(context.Background(), other, inst.url, "", nil); err != nil {
			t.Fatalf("the other device's enrollment %d after the flood: %v", i+2, err)
		}
	}
	if got := inst.srv.Stats().Enrolled; got != 3+3+3 {
		t.Fatalf("the operator enrolled %d devices, want 9", got)
	}
}

// TestEnrollmentProofOfWork: an open enrollment without the proof of work, or with one for
// another key, is refused in words before it counts; a device enrolls with the work done
// inside identity.Enroll, and an operator asking for more work than a device does is refused
// with words.
func TestEnrollmentProofOfWork(t *testing.T) {
	inst := startOperator(t, opts{enrollment: identity.EnrollmentOpen, edit: func(c *operator.Config) {
		c.EnrollPerAddress, c.EnrollPoWBits = 1, 16
	}}, "")
	ctx := context.Background()
	c, err := identity.FetchOperatorConfig(ctx, inst.client, inst.url)
	if err != nil || c.EnrollPoW == nil || c.EnrollPoW.Bits != 16 || c.EnrollPoW.Alg != identity.PoWAlg {
		t.Fatalf("the configuration advertises %+v (%v)", c.EnrollPoW, err)
	}
	for _, nonce := range []string{"", "12345", strings.Repeat("9", 30)} {
		status, oe := rawEnroll(t, inst, nonce)
		if status != http.StatusBadRequest || !strings.Contains(oe.Description, "proof of work of 16 bits") {
			t.Fatalf("nonce %q: %d %+v", nonce, status, oe)
		}
	}
	if _, err := identity.Enroll(ctx, inst.client, inst.url, "", nil); err != nil {
		t.Fatalf("the one enrollment of the address after refused ones: %v", err)
	}
	if _, err := identity.SolveEnrollPoW(ctx, "https://x.example/v1/devices", "tp", identity.MaxEnrollPoWBits+1); err == nil || !strings.Contains(err.Error(), "enrollment token") {
		t.Fatalf("too much work: %v", err)
	}
}

// TestTrustedProxyAddress: behind a reverse proxy the operator trusts, the client address is
// the one the proxy saw, so two clients behind it have their own limits; from a peer it does not
// trust, a forged X-Forwarded-For changes nothing.
func TestTrustedProxyAddress(t *testing.T) {
	proxy := httptest.NewUnstartedServer(nil)
	proxy.StartTLS()
	defer proxy.Close()
	inst := startOperator(t, opts{enrollment: identity.EnrollmentOpen, edit: func(c *operator.Config) {
		c.EnrollPerAddress, c.EnrollPerNetwork, c.EnrollPoWBits = 1, 100, 8
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}}, proxy.URL)
	u, _ := url.Parse(inst.http.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = inst.http.Client().Transport
	proxy.Config.Handler = rp // adds the client's address to X-Forwarded-For
	front := &instance{url: proxy.URL, client: proxy.Client(), http: proxy}
	a, b := clientFrom(t, front, "127.0.0.7"), clientFrom(t, front, "127.0.8.8")
	for name, c := range map[string]*http.Client{"127.0.0.7": a, "127.0.8.8": b} {
		if _, err := identity.Enroll(context.Background(), c, proxy.URL, "", nil); err != nil {
			t.Fatalf("%s through the proxy: %v", name, err)
		}
	}
	var le *identity.EnrollLimitError
	if _, err := identity.Enroll(context.Background(), a, proxy.URL, "", nil); !errors.As(err, &le) || !strings.Contains(err.Error(), "127.0.0.7") {
		t.Fatalf("a second enrollment of 127.0.0.7 through the proxy: %v", err)
	}
	// Directly, from 127.0.0.9, with a forged header: the connection's address counts.
	forger := clientFrom(t, inst, "127.0.0.9")
	forger.Transport = headerSetter{forger.Transport, "X-Forwarded-For", "203.0.113.1"}
	if _, err := identity.Enroll(context.Background(), forger, inst.url, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Enroll(context.Background(), forger, inst.url, "", nil); !errors.As(err, &le) || !strings.Contains(err.Error(), "127.0.0.9") {
		t.Fatalf("a forged X-Forwarded-For from an untrusted peer: %v", err)
	}
}

type headerSetter struct {
	rt          http.RoundTripper
	name, value string
}

func (h headerSetter) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.rt.RoundTrip(r)
}

// rawEnroll sends an open enrollment of a new key with the given proof-of-work nonce.
func rawEnroll(t *testing.T, inst *instance, nonce string) (int, identity.OperatorError) {
	t.Helper()
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pub, _, err := identity.PublicJWK(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(identity.EnrollRequest{DeviceKey: pub, PoW: nonce})
	status, _, oe := postWithProof(t, inst, priv, "", "/v1/devices", body, time.Now())
	return status, oe
}
