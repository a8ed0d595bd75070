package operator_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha512"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudflare/circl/blindsign/blindrsa"

	"github.com/poppydesk/poppydesk/agentcore/operator"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

// BenchmarkBlindSignatures measures, with the default 3072-bit key, in one run and in CPU time
// (the process's user and system time around each operation, internal/benchratio.RunCPU), so
// that other processes on the machine change neither side:
//
//   - operator.BlindSign/vs=rsa.SignPSS: the operator's blind signature (CRT with base and
//     exponent blinding and the fault check) against a bare RSA-PSS signature of the same key
//     in Go's crypto/rsa, the cost floor of any signature;
//   - circl.BlindSign/vs=rsa.SignPSS: circl's blind signer (no CRT), for comparison;
//   - operator.BlindSign/vs=circl.BlindSign: the speed-up over circl;
//   - server/50-devices: the whole service with 50 enrolled devices asking at once, each request
//     a device proof check, the quota and replay transaction (SQLite) and the blind signature,
//     over loopback TLS, with the device's blinding, unblinding and PS384 check in the same
//     process: CPU per signature of everything, and p99 latency.
//
// Each reports ops/cpu-s (signatures per CPU-second) and x-baseline, the ratio of CPU times.
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
	msg := []byte("eyJhbGciOiJQUzM4NCJ9.eyJqdGkiOiJ4In0")
	digest := sha512.Sum384(msg)
	pss := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}
	client, _ := blindrsa.NewClient(blindrsa.SHA384PSSDeterministic, &priv.PublicKey)
	blinded, _, err := client.Blind(rand.Reader, msg)
	if err != nil {
		b.Fatal(err)
	}
	circl := blindrsa.NewSigner(priv)
	bareRSA := func(b *testing.B) {
		if _, err := rsa.SignPSS(rand.Reader, priv, crypto.SHA384, digest[:], pss); err != nil {
			b.Fatal(err)
		}
	}
	operatorSign := func(b *testing.B) {
		if _, err := keys[0].BlindSignForBenchmark(blinded); err != nil {
			b.Fatal(err)
		}
	}
	circlSign := func(b *testing.B) {
		if _, err := circl.BlindSign(blinded); err != nil {
			b.Fatal(err)
		}
	}
	benchratio.RunCPU(b, "operator.BlindSign", "rsa.SignPSS", operatorSign, bareRSA)
	benchratio.RunCPU(b, "circl.BlindSign", "rsa.SignPSS", circlSign, bareRSA)
	benchratio.RunCPU(b, "operator.BlindSign", "circl.BlindSign", operatorSign, circlSign)

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
		// The baseline, bare RSA-PSS signatures in the same process just before.
		const baseN = 20
		t0 := benchratio.CPUTime(b)
		for range baseN {
			bareRSA(b)
		}
		baseCPU := (benchratio.CPUTime(b) - t0) / baseN
		var next atomic.Int64
		var mu sync.Mutex
		var lat []time.Duration
		b.ResetTimer()
		c0 := benchratio.CPUTime(b)
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
		cpu := benchratio.CPUTime(b) - c0
		b.StopTimer()
		slices.Sort(lat)
		if len(lat) > 0 {
			b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
		}
		per := cpu / time.Duration(b.N)
		b.ReportMetric(float64(per.Nanoseconds()), "cpu-ns/op")
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "ops/cpu-s")
		b.ReportMetric(float64(per)/float64(baseCPU), "x-bare-rsa")
	})
}
