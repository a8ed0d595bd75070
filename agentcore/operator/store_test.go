package operator_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/operator"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// TestMigrationsFromEmpty: both databases migrate from empty to the current schema, a second
// open changes nothing, and PostgreSQL instances starting at once do not trip over each other.
func TestMigrationsFromEmpty(t *testing.T) {
	ctx := context.Background()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "op.sqlite")
			if db == "postgres" {
				dsn = startPostgres(t)
			}
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st, err := operator.OpenStore(ctx, dsn)
					if err == nil {
						st.Close()
					}
					errs[i] = err
				}()
				if db == "sqlite" {
					wg.Wait() // one instance only
				}
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			st, err := operator.OpenStore(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if st.Postgres() != (db == "postgres") {
				t.Fatalf("Postgres() = %v", st.Postgres())
			}
			rows, err := st.Dump(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var versions int
			for _, r := range rows {
				if strings.HasPrefix(r, "schema_migrations ") {
					versions++
				}
			}
			if versions != operator.SchemaVersion() {
				t.Fatalf("schema_migrations has %d rows, want %d: %v", versions, operator.SchemaVersion(), rows)
			}
			// The schema works: a device enrolls and uses its quota.
			now := time.Now()
			if err := st.Enroll(ctx, "dev_x", []byte(`{}`), "", now); err != nil {
				t.Fatal(err)
			}
			hour := []operator.Count{{Subject: "dev_x", Limit: operator.Limit{Window: "hour", Max: 1}}}
			if err := st.Use(ctx, "jti-1", hour, now); err != nil {
				t.Fatal(err)
			}
			var oq *operator.OverQuota
			if err := st.Use(ctx, "jti-2", hour, now); !errors.As(err, &oq) || oq.Subject != "dev_x" {
				t.Fatalf("over quota: %v", err)
			}
			if err := st.Use(ctx, "jti-1", nil, now); !errors.Is(err, operator.ErrReplay) {
				t.Fatalf("replayed jti: %v", err)
			}
			if err := st.Prune(ctx, now.Add(72*time.Hour)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// roundRobin is a load balancer in front of operator instances: each request goes to the next.
type roundRobin struct {
	backends []*httputil.ReverseProxy
	n        atomic.Int64
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rr.backends[int(rr.n.Add(1)-1)%len(rr.backends)].ServeHTTP(w, r)
}

// TestTwoInstancesShareDevicesAndQuota: two operator instances on one PostgreSQL database behind
// a round-robin load balancer. A device enrolled through one is served by both, its requests
// alternate between them, and its quota is one quota: together they sign exactly PerHour times,
// then both refuse. The proof of one request is not accepted again by the other instance.
func TestTwoInstancesShareDevicesAndQuota(t *testing.T) {
	ctx := context.Background()
	dsn := startPostgres(t)
	clk := refcompany.NewFrozenClock(time.Date(2026, 5, 2, 10, 0, 0, 0, time.UTC))
	keys := keySet(t, testKey(t, time.Time{}))
	lb := httptest.NewUnstartedServer(nil)
	lb.StartTLS()
	defer lb.Close()
	const perHour = 8
	a := startOperator(t, opts{dsn: dsn, keys: keys, clock: clk, perHour: perHour}, lb.URL)
	b := startOperator(t, opts{dsn: dsn, keys: keys, clock: clk, perHour: perHour}, lb.URL)
	rr := &roundRobin{}
	for _, inst := range []*instance{a, b} {
		u, _ := url.Parse(inst.http.URL)
		p := httputil.NewSingleHostReverseProxy(u)
		p.Transport = inst.client.Transport
		rr.backends = append(rr.backends, p)
	}
	lb.Config.Handler = rr
	front := &instance{store: a.store, client: lb.Client(), url: lb.URL}
	d := enrollDevice(t, front, nil, enrollToken(t, a.store, clk.Now()), clk.Now)

	// Sign concurrently from the one device, through the load balancer.
	var wg sync.WaitGroup
	errs := make(chan error, perHour+4)
	for range perHour + 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.agent.ClientAssertion(ctx, "https://auth.shop.example")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	var ok, over int
	for err := range errs {
		var qe *identity.OperatorQuotaError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &qe):
			over++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != perHour || over != 4 {
		t.Fatalf("signed %d and refused %d over quota; want exactly %d and 4", ok, over, perHour)
	}
	sa, sb := a.srv.Stats().Signatures, b.srv.Stats().Signatures
	if sa == 0 || sb == 0 || sa+sb != perHour {
		t.Fatalf("instance A signed %d, B %d; want both, %d together", sa, sb, perHour)
	}
	// The next hour, both sign again for the device, alternately.
	clk.Advance(time.Hour)
	if _, err := d.agent.ClientAssertion(ctx, "https://auth.shop.example"); err != nil { // reads the schedule and keys again
		t.Fatal(err)
	}
	sa, sb = a.srv.Stats().Signatures, b.srv.Stats().Signatures
	for range 4 {
		if _, err := d.agent.ClientAssertion(ctx, "https://auth.shop.example"); err != nil {
			t.Fatal(err)
		}
	}
	if da, db := a.srv.Stats().Signatures-sa, b.srv.Stats().Signatures-sb; da != 2 || db != 2 {
		t.Fatalf("after the hour: A signed %d, B %d; want 2 each (round robin)", da, db)
	}
}

// TestMigrationForgetsDeviceTimes: a database an older build left — a device enrolled and
// revoked at a second, replay-cache rows naming devices with a proof's second — migrates to the
// current schema on SQLite and PostgreSQL: the replay rows are gone, the device's times are
// kept to the day, the device still authenticates, and a second enrollment of its key is
// refused.
func TestMigrationForgetsDeviceTimes(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 5, 2, 10, 17, 43, 0, time.UTC)
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "op.sqlite")
			if db == "postgres" {
				dsn = startPostgres(t)
			}
			old, err := operator.OpenStoreAt(ctx, dsn, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, stmt := range []struct {
				q    string
				args []any
			}{
				{`INSERT INTO devices (id, public_jwk, enrolled_at) VALUES ($1, $2, $3)`, []any{"dev_a", `{"k":"a"}`, at.Unix()}},
				{`INSERT INTO devices (id, public_jwk, enrolled_at, revoked_at) VALUES ($1, $2, $3, $4)`, []any{"dev_b", `{"k":"b"}`, at.Unix(), at.Add(time.Hour).Unix()}},
				{`INSERT INTO proof_jtis (device_id, jti, expires_at) VALUES ($1, $2, $3)`, []any{"dev_a", "jti-old", at.Add(61 * time.Second).Unix()}},
			} {
				if err := old.Exec(ctx, stmt.q, stmt.args...); err != nil {
					t.Fatal(err)
				}
			}
			old.Close()
			st, err := operator.OpenStore(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rows, err := st.Dump(ctx)
			if err != nil {
				t.Fatal(err)
			}
			midnight := strconv.FormatInt(time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC).Unix(), 10)
			var devices int
			for _, r := range rows {
				switch {
				case strings.HasPrefix(r, "proof_jtis "):
					t.Errorf("a replay row naming a device survived the migration: %s", r)
				case strings.HasPrefix(r, "devices "):
					devices++
					if !strings.Contains(r, "enrolled_at="+midnight) || strings.Contains(r, "revoked_at=") && !strings.Contains(r, "revoked_at=<nil>") && !strings.Contains(r, "revoked_at="+midnight) {
						t.Errorf("a device's times are not kept to the day: %s", r)
					}
				}
			}
			if devices != 2 {
				t.Fatalf("%d devices after the migration, want 2: %v", devices, rows)
			}
			if k, err := st.DeviceKey(ctx, "dev_a"); err != nil || string(k) != `{"k":"a"}` {
				t.Fatalf("the enrolled device after the migration: %s, %v", k, err)
			}
			if err := st.Enroll(ctx, "dev_c", []byte(`{"k":"a"}`), "", time.Now()); !errors.Is(err, operator.ErrKeyEnrolled) {
				t.Fatalf("enrolling a key twice: %v", err)
			}
		})
	}
}

// TestDatabaseFilesPrivate: the SQLite database, its write-ahead log and shared memory are
// readable by the operator's user only (0600), whether the file is new or an older version left
// it readable by all.
func TestDatabaseFilesPrivate(t *testing.T) {
	ctx := context.Background()
	for _, existing := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "op.sqlite")
		if existing {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, 0o644)
		}
		st, err := operator.OpenStore(ctx, "sqlite:"+path)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Enroll(ctx, "dev_x", []byte(`{}`), "", time.Now()); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s (existing file %v) has mode %v, want 0600", filepath.Base(p), existing, fi.Mode().Perm())
			}
		}
		st.Close()
	}
}

// TestMetricsNotPublic: /metrics on the service's listener answers 404 without the bearer token
// (and with a wrong one), the counters with it; MetricsHandler serves them on a listener of
// their own.
func TestMetricsNotPublic(t *testing.T) {
	inst := startOperator(t, opts{edit: func(c *operator.Config) { c.MetricsToken = "metrics-secret-token" }}, "")
	get := func(h http.Handler, auth string) (int, string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, auth := range []string{"", "Bearer wrong", "metrics-secret-token"} {
		if code, body := get(inst.srv.Handler(), auth); code != http.StatusNotFound || strings.Contains(body, "poppydesk_operator") {
			t.Errorf("/metrics with %q: %d %s", auth, code, body)
		}
	}
	for name, h := range map[string]http.Handler{"with the token": inst.srv.Handler(), "on its own listener": inst.srv.MetricsHandler()} {
		auth := ""
		if name == "with the token" {
			auth = "Bearer metrics-secret-token"
		}
		if code, body := get(h, auth); code != 200 || !strings.Contains(body, "poppydesk_operator_blind_signatures_total 0") {
			t.Errorf("/metrics %s: %d %s", name, code, body)
		}
	}
}
