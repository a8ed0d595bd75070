package apis_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/internal/benchratio"
)

var benchDoc = []byte(`{"openapi":"3.1.0","info":{"title":"Shop API","version":"1"},"servers":[{"url":"/api"}],
"components":{"securitySchemes":{"shop":{"type":"oauth2","flows":{"authorizationCode":{"authorizationUrl":"https://a/authorize","tokenUrl":"https://a/token","scopes":{"orders:read":"Read","orders:write":"Write"}}}}}},
"paths":{"/orders":{"get":{"operationId":"listOrders","security":[{"shop":["orders:read"]}],"responses":{"200":{"description":"ok"}}}},
"/orders/{id}":{"get":{"operationId":"getOrder","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"security":[{"shop":["orders:read"]}],"responses":{"200":{"description":"ok"}}}},
"/orders/{id}/exchanges":{"post":{"operationId":"exchangeItem","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"security":[{"shop":["orders:write"]}],
"requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object","properties":{"item_id":{"type":"string"},"replacement_sku":{"type":"string"}}}}}},"responses":{"201":{"description":"ok"}}}}}}`)

// BenchmarkParseOpenAPI reads a small description and lists its operations, against the
// baseline of a plain encoding/json decode of the same bytes.
func BenchmarkParseOpenAPI(b *testing.B) {
	var db transport.DestinationsBuilder
	db.Prefix("https://shop.example/api")
	dest := db.Build()
	ctx := context.Background()
	benchratio.RunCPU(b, "ParseOpenAPI", "json.Unmarshal", func(b *testing.B) {
		if _, err := apis.ParseOpenAPI(ctx, "https://shop.example/api/openapi.json", benchDoc, dest); err != nil {
			b.Fatal(err)
		}
	}, func(b *testing.B) {
		var v map[string]any
		if err := json.Unmarshal(benchDoc, &v); err != nil {
			b.Fatal(err)
		}
	})
}

// peakHeap runs f and returns how far the heap's objects grew above their level before it (the
// heap after a GC), sampled every 100 µs with runtime/metrics while f runs, and f's duration.
func peakHeap(f func()) (peak uint64, took time.Duration) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	done := make(chan struct{})
	sampled := make(chan uint64)
	go func() {
		var max uint64
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > max {
				max = v
			}
			select {
			case <-done:
				sampled <- max
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	f()
	took = time.Since(start)
	metrics.Read(s)
	close(done)
	max := <-sampled
	if v := s[0].Value.Uint64(); v > max {
		max = v
	}
	if max < base {
		return 0, took
	}
	return max - base, took
}

// BenchmarkGitHubDescription parses and indexes GitHub's REST API description (13 MB, 1,223
// operations) as the engine does, against a plain encoding/json decode of the same bytes into
// `any` in the same run: x-baseline is the time ratio (target ≤ 2). The heap's peak growth over
// the document's size is measured once for each before the timed run: peak-heap/doc (target ≤
// 10) and json-peak-heap/doc.
func BenchmarkGitHubDescription(b *testing.B) {
	data := poppytest.NeedGitHubDescription(b)
	var db transport.DestinationsBuilder
	db.Prefix("https://api.github.com/")
	dest := db.Build()
	ctx := context.Background()
	parse := func(b *testing.B) {
		d, err := apis.ParseOpenAPI(ctx, "https://api.github.com/openapi.json", data, dest)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := d.Operation("issues/create"); !ok || len(d.Operations) != 1223 {
			b.Fatalf("%d operations", len(d.Operations))
		}
		runtime.KeepAlive(d)
	}
	decode := func(b *testing.B) {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
		runtime.KeepAlive(v)
	}
	parsePeak, parseT := peakHeap(func() { parse(b) })
	jsonPeak, jsonT := peakHeap(func() { decode(b) })
	size := float64(len(data))
	benchratio.RunCPU(b, "ParseOpenAPI", "json.Unmarshal", func(b *testing.B) {
		parse(b)
		b.ReportMetric(float64(parsePeak)/size, "peak-heap/doc")
		b.ReportMetric(float64(jsonPeak)/size, "json-peak-heap/doc")
		b.ReportMetric(float64(parsePeak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(parseT.Milliseconds()), "first-parse-ms")
		b.ReportMetric(float64(jsonT.Milliseconds()), "first-json-ms")
	}, decode)
}

// BenchmarkGitHubDescriptionKinOpenAPI is kin-openapi's loader on the same document, for
// comparison (about 3 s an iteration, so it runs only with POPPYDESK_BENCH_KIN=1).
func BenchmarkGitHubDescriptionKinOpenAPI(b *testing.B) {
	if os.Getenv("POPPYDESK_BENCH_KIN") != "1" {
		b.Skip("kin-openapi on GitHub's description takes about 3 s an iteration; set POPPYDESK_BENCH_KIN=1 to run it")
	}
	data := poppytest.NeedGitHubDescription(b)
	var jsonT, kinT time.Duration
	for b.Loop() {
		var v any
		start := time.Now()
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
		jsonT += time.Since(start)
		start = time.Now()
		loader := openapi3.NewLoader()
		if _, err := loader.LoadFromData(data); err != nil {
			b.Fatal(err)
		}
		kinT += time.Since(start)
	}
	b.ReportMetric(float64(kinT)/float64(jsonT), "kin/json")
}

// BenchmarkSend measures an API call through Client.Send (the signed-request pipeline with the
// API's own work: Idempotency-Key, the body read, the Result) against the baseline of the
// pipeline's Do for the same signed-out GET, over loopback TLS to the reference Company.
func BenchmarkSend(b *testing.B) {
	f := newFixture(b)
	sess := f.session(b, "", nil)
	c := f.client(b, sess)
	sc, err := f.tr.Session(transport.SessionConfig{Signer: sess, Destinations: f.dest, Version: f.company.Version})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	u := f.s.URL(refcompany.ShopHost, "/api/products")
	benchratio.Run(b, "apis.Send", "transport.SessionClient", func(b *testing.B) {
		res, err := c.Send(ctx, &apis.Request{Method: http.MethodGet, URL: u})
		if err != nil || res.Status != http.StatusOK {
			b.Fatal(res, err)
		}
		f.s.ResetRequests()
	}, func(b *testing.B) {
		resp, err := sc.Do(ctx, &transport.Request{Method: http.MethodGet, URL: u})
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		f.s.ResetRequests()
	})
}
