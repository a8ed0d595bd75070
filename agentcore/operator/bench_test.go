package operator_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha512"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudflare/circl/blindsign/blindrsa"

	"github.com/poppydesk/poppydesk/agentcore/operator"
)

// BenchmarkBlindSignatures measures, with the default 3072-bit key, in one run:
//
//   - baseline=rsa.SignPSS: a bare RSA private-key operation of the same size (Go's crypto/rsa,
//     PS384), the cost floor of any signature;
//   - blindrsa.BlindSign: the operator's blind signature alone (circl), per core;
//   - server/50-devices: the whole service: 50 enrolled devices asking at once, each request a
//     device proof check, the quota and jti transaction (SQLite) and the blind signature, over
//     loopback TLS, with the device's blinding, unblinding and PS384 check.
//
// Each reports signatures per second per core and the ratio of its cost to the baseline's
// (x-bare-rsa); the server also reports its p99 latency in milliseconds.
func BenchmarkBlindSignatures(b *testing.B) {
	pemData, _, err := operator.GenerateKey(operator.DefaultKeyBits, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	keys, err := operator.ParseKeys(pemData, "bench.pem")
	if err != nil {
		b.Fatal(err)
	}
	priv := keys[0].PrivateKeyForBenchmark()
	digest := sha512.Sum384([]byte("eyJhbGciOiJQUzM4NCJ9.eyJqdGkiOiJ4In0"))
	pss := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}
	cores := float64(runtime.GOMAXPROCS(0))
	perCore := func(b *testing.B, ops int) float64 { return float64(ops) / b.Elapsed().Seconds() / cores }

	// The baseline runs first; the later sub-benchmarks compare themselves with its last run.
	var baseNs float64 // per operation per core
	b.Run("baseline=rsa.SignPSS", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := rsa.SignPSS(rand.Reader, priv, crypto.SHA384, digest[:], pss); err != nil {
					b.Error(err)
					return
				}
			}
		})
		baseNs = 1e9 / perCore(b, b.N)
		b.ReportMetric(perCore(b, b.N), "sigs/s/core")
		b.ReportMetric(1, "x-bare-rsa")
	})
	b.Run("blindrsa.BlindSign", func(b *testing.B) {
		client, _ := blindrsa.NewClient(blindrsa.SHA384PSSDeterministic, &priv.PublicKey)
		blinded, _, err := client.Blind(rand.Reader, []byte("eyJhbGciOiJQUzM4NCJ9.eyJqdGkiOiJ4In0"))
		if err != nil {
			b.Fatal(err)
		}
		signer := blindrsa.NewSigner(priv)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := signer.BlindSign(blinded); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(perCore(b, b.N), "sigs/s/core")
		b.ReportMetric(1e9/baseNs/perCore(b, b.N), "x-bare-rsa")
	})
	b.Run("server/50-devices", func(b *testing.B) {
		ks, err := operator.NewKeySet(keys)
		if err != nil {
			b.Fatal(err)
		}
		inst := startOperator(b, opts{keys: ks, perHour: 1 << 30, perDay: 1 << 30}, "")
		const devices = 50
		var devs []*device
		for range devices {
			devs = append(devs, enrollDevice(b, inst, nil, enrollToken(b, inst.store, time.Now()), nil))
		}
		ctx := context.Background()
		for _, d := range devs { // read the schedule and keys once, as a running device has
			if _, err := d.agent.ClientAssertion(ctx, "https://auth.shop.example"); err != nil {
				b.Fatal(err)
			}
		}
		var next atomic.Int64
		var mu sync.Mutex
		var lat []time.Duration
		b.ResetTimer()
		var wg sync.WaitGroup
		for _, d := range devs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for next.Add(1) <= int64(b.N) {
					t0 := time.Now()
					if _, err := d.agent.ClientAssertion(ctx, "https://auth.shop.example"); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		b.StopTimer()
		slices.Sort(lat)
		if len(lat) > 0 {
			b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
		}
		b.ReportMetric(perCore(b, b.N), "sigs/s/core")
		b.ReportMetric(1e9/baseNs/perCore(b, b.N), "x-bare-rsa")
	})
}
