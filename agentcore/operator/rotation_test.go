package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/operator"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// swappable serves whichever handler was set last: a new deployment of the operator.
type swappable struct{ h atomic.Pointer[http.Handler] }

func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*s.h.Load()).ServeHTTP(w, r) }
func (s *swappable) set(h http.Handler)                               { s.h.Store(&h) }

// TestRotationDuringTraffic: devices keep asking for signatures while the operator is
// redeployed with a new key whose Sign-From is a few seconds away, the key takes over, and the
// old one's grace ends. No request fails: devices that still hold the old schedule are served
// by the old key during the grace, devices with the new schedule switch at Sign-From, and every
// signature verifies with the JWKS published at that time. After the grace the old key no longer
// signs (HTTP 409 key_not_signing) but stays published.
func TestRotationDuringTraffic(t *testing.T) {
	ctx := context.Background()
	clk := refcompany.NewFrozenClock(time.Date(2026, 5, 2, 10, 0, 0, 0, time.UTC))
	k1 := testKey(t, time.Time{})
	inst := startOperator(t, opts{clock: clk, keys: keySet(t, k1), perHour: 100000, perDay: 100000}, "")
	var sw swappable
	sw.set(inst.srv.Handler())
	inst.http.Config.Handler = &sw
	redeploy := func(keys *operator.KeySet) *operator.Server {
		srv, err := operator.New(operator.Config{PublicURL: inst.url, Keys: keys, Store: inst.store, PerHour: 100000, PerDay: 100000,
			Now: clk.Now, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		sw.set(srv.Handler())
		return srv
	}
	const devices = 6
	var devs []*device
	for range devices {
		devs = append(devs, enrollDevice(t, inst, nil, enrollToken(t, inst.store, clk.Now()), clk.Now))
	}
	k1kid, _, _ := devs[0].op.SigningKey(ctx)

	var mu sync.Mutex
	kids := map[string]int{}
	var failures []error
	var made atomic.Int64
	each := make([]atomic.Int64, len(devs)) // signatures made, per device
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, d := range devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				as, err := d.agent.ClientAssertion(ctx, "https://auth.shop.example")
				mu.Lock()
				if err != nil {
					failures = append(failures, err)
				} else {
					msg, _ := jws.Parse([]byte(as))
					kid, _ := msg.Signatures()[0].ProtectedHeaders().KeyID()
					kids[kid]++
				}
				mu.Unlock()
				made.Add(1)
				each[i].Add(1)
			}
		}()
	}
	// waitFor lets the devices make n more signatures at the current time.
	waitFor := func(n int64) {
		t.Helper()
		target := made.Load() + n
		deadline := time.Now().Add(30 * time.Second)
		for made.Load() < target {
			if time.Now().After(deadline) {
				t.Fatal("the devices stopped signing")
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(20)
	// Deploy K2, published now, signing 10 s from now.
	k2 := testKey(t, clk.Now().Add(10*time.Second))
	redeploy(keySet(t, k1, k2))
	waitFor(20)
	// Sign-From passes. Devices still hold the schedule without K2 (read less than a minute
	// ago): the old key signs for them within the grace.
	clk.Advance(20 * time.Second)
	waitFor(30)
	// everyDevice waits until every device has made two more signatures: the second began after
	// this call, so no device's request in flight is older than the current time.
	everyDevice := func() {
		t.Helper()
		target := make([]int64, len(each))
		for i := range each {
			target[i] = each[i].Load() + 2
		}
		deadline := time.Now().Add(30 * time.Second)
		for i := range each {
			for each[i].Load() < target[i] {
				if time.Now().After(deadline) {
					t.Fatalf("device %d stopped signing", i)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	// Time passes in steps shorter than a device proof's window, as it does for requests in
	// flight, each step only once every device signs at the time before it (a slow device's
	// proof is then never more than a step old): a minute later every device has read the new
	// schedule; then the grace ends.
	advance := func(d time.Duration) {
		for ; d > 0; d -= 20 * time.Second {
			clk.Advance(min(d, 20*time.Second))
			everyDevice()
		}
	}
	advance(time.Minute)
	waitFor(30)
	advance(operator.Grace)
	waitFor(30)
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed during the rotation; the first: %v", len(failures), made.Load(), failures[0])
	}
	k2kid := ""
	for kid := range kids {
		if kid != k1kid {
			k2kid = kid
		}
	}
	if len(kids) != 2 || kids[k1kid] == 0 || kids[k2kid] == 0 {
		t.Fatalf("signatures by key: %v; want both keys", kids)
	}
	// Every assertion verifies with the JWKS now published; both keys are still in it.
	resp, err := inst.client.Get(inst.url + "/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.ParseReader(resp.Body)
	resp.Body.Close()
	if err != nil || set.Len() != 2 {
		t.Fatalf("JWKS after the rotation: %d keys, %v", set.Len(), err)
	}
	// After the grace, the old key is refused with a clear error, and the device recovers.
	_, err = devs[0].op.Sign(ctx, k1kid, jwa.PS384(), []byte("eyJhbGciOiJQUzM4NCJ9.e30"))
	var re *identity.OperatorRefusedError
	if !errors.As(err, &re) || re.Status != http.StatusConflict || re.Code != identity.OperatorErrKeyNotSigning {
		t.Fatalf("the old key after the grace: %v", err)
	}
	if kid, _, _ := devs[0].op.SigningKey(ctx); kid != k2kid {
		t.Fatalf("after key_not_signing the device signs with %s, want %s", kid, k2kid)
	}
	var c identity.OperatorConfig
	resp, _ = inst.client.Get(inst.url + identity.OperatorConfigPath)
	json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if c.SigningKid != k2kid || len(c.Keys) != 2 {
		t.Fatalf("config after the rotation: %+v", c)
	}
}
