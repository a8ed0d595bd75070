package operator_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/operator"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// syncBuffer is a goroutine-safe log buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// testKey makes an RSA key file content (2048 bits keeps the tests quick; the default is 3072).
func testKey(t testing.TB, signFrom time.Time) []byte {
	t.Helper()
	pemData, _, err := operator.GenerateKey(2048, signFrom)
	if err != nil {
		t.Fatal(err)
	}
	return pemData
}

func keySet(t testing.TB, pems ...[]byte) *operator.KeySet {
	t.Helper()
	var keys []*operator.Key
	for i, p := range pems {
		k, err := operator.ParseKeys(p, fmt.Sprintf("key%d.pem", i))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k...)
	}
	ks, err := operator.NewKeySet(keys)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

type opts struct {
	dsn        string // "" : SQLite in a temp folder
	keys       *operator.KeySet
	enrollment string
	perHour    int
	perDay     int
	clock      *refcompany.Clock
	logs       *syncBuffer
	edit       func(*operator.Config) // changes the Config before New
}

// instance is one running operator behind loopback TLS.
type instance struct {
	srv    *operator.Server
	store  *operator.Store
	http   *httptest.Server
	client *http.Client
	url    string
	dbPath string
}

// startOperator runs an operator over HTTPS on loopback. Its public URL is its own address,
// unless publicURL is given (instances behind one load balancer share it).
func startOperator(t testing.TB, o opts, publicURL string) *instance {
	t.Helper()
	ctx := context.Background()
	inst := &instance{}
	dsn := o.dsn
	if dsn == "" {
		inst.dbPath = filepath.Join(t.TempDir(), "operator.sqlite")
		dsn = "sqlite:" + inst.dbPath
	}
	st, err := operator.OpenStore(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	inst.store = st
	hs := httptest.NewUnstartedServer(nil)
	hs.StartTLS()
	t.Cleanup(hs.Close)
	inst.http, inst.client = hs, hs.Client()
	if publicURL == "" {
		publicURL = hs.URL
	}
	inst.url = publicURL
	logs := o.logs
	if logs == nil {
		logs = &syncBuffer{}
	}
	var now func() time.Time
	if o.clock != nil {
		now = o.clock.Now
	}
	if o.keys == nil {
		o.keys = keySet(t, testKey(t, time.Time{}))
	}
	cfg := operator.Config{PublicURL: publicURL, ClientName: "Test Operator", Keys: o.keys, Store: st,
		Enrollment: o.enrollment, PerHour: o.perHour, PerDay: o.perDay, Now: now,
		Logger: slog.New(slog.NewJSONHandler(logs, nil))}
	if o.edit != nil {
		o.edit(&cfg)
	}
	srv, err := operator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inst.srv = srv
	hs.Config.Handler = srv.Handler()
	return inst
}

// enrollToken issues an enrollment token the way `poppydesk operator enroll-token` does.
func enrollToken(t testing.TB, st *operator.Store, now time.Time) string {
	t.Helper()
	tok := "ppd_enroll_" + identity.NewID(32)
	if err := st.AddEnrollToken(context.Background(), tok, now, now.Add(time.Hour), 1); err != nil {
		t.Fatal(err)
	}
	return tok
}

// device is an enrolled device: its operator client and an Agent that writes assertions and
// delegations with it.
type device struct {
	bundle *store.DeviceBundle
	op     *identity.RemoteOperator
	agent  *identity.Agent
}

func enrollDevice(t testing.TB, inst *instance, client *http.Client, token string, now func() time.Time) *device {
	t.Helper()
	if client == nil {
		client = inst.client
	}
	b, err := identity.Enroll(context.Background(), client, inst.url, token, now)
	if err != nil {
		t.Fatal(err)
	}
	op, err := identity.NewRemoteOperator(identity.RemoteConfig{Device: b, HTTPClient: client, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	a, err := identity.New(identity.Config{ClientID: b.ClientID, ClientName: b.ClientName, JWKSURI: b.JWKSURI}, op, now)
	if err != nil {
		t.Fatal(err)
	}
	return &device{bundle: b, op: op, agent: a}
}

// startPostgres runs a throwaway PostgreSQL cluster (Debian's postgresql package) on a Unix
// socket in a temporary folder, stopped when the test ends, and returns a DSN for a new
// database in it. Without PostgreSQL the test is skipped, or fails when
// POPPYDESK_REQUIRE_POSTGRES=1 (scripts/test.sh sets it).
func startPostgres(t testing.TB) string {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		if os.Getenv("POPPYDESK_REQUIRE_POSTGRES") == "1" {
			t.Fatal("PostgreSQL is not installed (Debian: apt-get install postgresql; scripts/bootstrap.sh does it) and POPPYDESK_REQUIRE_POSTGRES=1")
		}
		t.Skip("PostgreSQL is not installed; set POPPYDESK_REQUIRE_POSTGRES=1 to make this a failure")
	}
	dir, err := os.MkdirTemp("", "ppd-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	if err := os.Mkdir(sock, 0o755); err != nil {
		t.Fatal(err)
	}
	// initdb and the server refuse to run as root: run them as the postgres user then.
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, PostgreSQL needs the postgres user (the postgresql package makes it): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, p := range []string{dir, sock} {
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(args ...string) {
		t.Helper()
		full := append(append([]string(nil), asUser...), args...)
		out, err := exec.Command(full[0], full[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(full, " "), err, out)
		}
	}
	run(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
	run(filepath.Join(bin, "pg_ctl"), "-D", data, "-l", filepath.Join(dir, "server.log"), "-w", "-t", "60",
		"-o", "-k "+sock+" -c listen_addresses='' -c fsync=off -c max_connections=100", "start")
	t.Cleanup(func() {
		full := append(append([]string(nil), asUser...), filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop")
		if out, err := exec.Command(full[0], full[1:]...).CombinedOutput(); err != nil {
			t.Errorf("stopping PostgreSQL: %v\n%s", err, out)
		}
	})
	return "host=" + sock + " user=postgres dbname=postgres sslmode=disable"
}

func postgresBin() string {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return ""
	}
	return filepath.Dir(matches[len(matches)-1])
}
