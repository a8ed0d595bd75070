package operator_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/operator"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
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

// startPostgres is poppytest.StartPostgres.
func startPostgres(t testing.TB) string { return poppytest.StartPostgres(t) }

// postWithProof POSTs body to path below inst with a device proof of priv (naming deviceID, or
// carrying the key when enrolling) made at now, and returns the status, the headers and the
// error answer.
func postWithProof(t testing.TB, inst *instance, priv *ecdsa.PrivateKey, deviceID, path string, body []byte, now time.Time) (int, http.Header, identity.OperatorError) {
	t.Helper()
	p, err := identity.SignDeviceProof(priv, deviceID, http.MethodPost, inst.url+path, body, now)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, inst.url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", identity.DeviceProofScheme+" "+p)
	resp, err := inst.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var oe identity.OperatorError
	json.NewDecoder(resp.Body).Decode(&oe)
	return resp.StatusCode, resp.Header, oe
}
