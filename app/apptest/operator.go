package apptest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/operator"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
)

// OperatorHost is the host name of the operator StartOperator runs.
const OperatorHost = "operator.localhost"

// OperatorOptions configure StartOperator.
type OperatorOptions struct {
	// ClientName is the operator's client_name ("": "Test Operator").
	ClientName string
	// Logo is the PNG it publishes at /logo.png (nil: the generated logo).
	Logo []byte
	// Enrollment is identity.EnrollmentToken (default) or identity.EnrollmentOpen.
	Enrollment string
	// Clock is the operator's clock (nil: a running refcompany.Clock); pass the Fixture's.
	Clock *refcompany.Clock
}

// Operator is the service `poppydesk operator serve` runs (agentcore/operator, its SQLite
// database on disk, a 2048-bit RSA key), on loopback TLS at https://operator.localhost:PORT
// with a certificate from a CA of its own. Trust adds both to a Host's developer mode.
type Operator struct {
	Server *operator.Server
	Store  *operator.Store
	// URL is the operator's base URL, CA the CA of its certificate, Kid its signing key.
	URL string
	CA  *x509.Certificate
	Kid string

	clock *refcompany.Clock
}

// StartOperator starts an operator, stopped at the test's cleanup.
func StartOperator(t testing.TB, o OperatorOptions) *Operator {
	t.Helper()
	ctx := context.Background()
	if o.Clock == nil {
		o.Clock = &refcompany.Clock{}
	}
	if o.ClientName == "" {
		o.ClientName = "Test Operator"
	}
	ca, err := refcompany.NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Leaf(time.Now(), OperatorHost)
	if err != nil {
		t.Fatal(err)
	}
	st, err := operator.OpenStore(ctx, "sqlite:"+filepath.Join(t.TempDir(), "operator.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pemKey, kid, err := operator.GenerateKey(2048, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := operator.ParseKeys(pemKey, "operator-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := operator.NewKeySet(keys)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + OperatorHost + ":" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	srv, err := operator.New(operator.Config{PublicURL: base, ClientName: o.ClientName, Logo: o.Logo, Keys: ks, Store: st,
		Enrollment: o.Enrollment, Now: o.Clock.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Listener.Close()
	hs.Listener = ln
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	return &Operator{Server: srv, Store: st, URL: base, CA: ca.Cert, Kid: kid, clock: o.Clock}
}

// Token issues an enrollment token for one device, valid for an hour, as `poppydesk operator
// enroll-token` does.
func (o *Operator) Token(t testing.TB) string {
	t.Helper()
	tok := "ppd_enroll_" + identity.NewID(32)
	now := o.clock.Now()
	if err := o.Store.AddEnrollToken(context.Background(), tok, now, now.Add(time.Hour), 1); err != nil {
		t.Fatal(err)
	}
	return tok
}

// Trust lets a Host reach the operator: its host and CA join the Host's developer mode (an
// Options.Edit).
func (o *Operator) Trust(c *app.Config) {
	c.Developer.Hosts = append(append([]string(nil), c.Developer.Hosts...), OperatorHost)
	c.Developer.RootCAs = append(append([]*x509.Certificate(nil), c.Developer.RootCAs...), o.CA)
}
