package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/operator"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

// operatorServeInfo is the one JSON line `poppydesk operator serve` prints once it listens.
type operatorServeInfo struct {
	Listen        string `json:"listen"`
	MetricsListen string `json:"metrics_listen,omitempty"`
	PublicURL     string `json:"public_url"`
	ClientID      string `json:"client_id"`
	SigningKid    string `json:"signing_kid"`
	Database      string `json:"database"`
}

const operatorUsage = `serve | keygen --out FILE | enroll-token | devices [revoke ID] | enroll URL [--token T] | status

  serve          run the operator service (flags or POPPYDESK_OPERATOR_* environment, see docs/OPERATOR.md)
  keygen         write a new RSA key file (--out FILE, --bits, --sign-from)
  enroll-token   issue an enrollment token for one device (--db, --ttl, --uses)
  devices        list the enrolled devices (--db); devices revoke ID refuses a device's requests from now on
  revoke-device  the same as devices revoke ID
  enroll URL     enroll this Poppydesk with the operator at URL (--token from its administrator)
  status         show which identity this Poppydesk signs with`

func operatorCommand() command {
	return command{name: "operator", summary: "Run an operator that publishes one identity for many users and signs for them blindly (spec 10.7), or enroll this Poppydesk with one.",
		usage: operatorUsage,
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			o := &operatorFlags{env: env}
			var keys, proxies listFlag
			fs.StringVar(&o.listen, "listen", "", "`address` to listen on (POPPYDESK_OPERATOR_LISTEN; default :8080)")
			fs.StringVar(&o.publicURL, "public-url", "", "the operator's public HTTPS base `URL`, e.g. https://operator.example (POPPYDESK_OPERATOR_PUBLIC_URL)")
			fs.Var(&keys, "key", "PEM key `file` (repeatable; POPPYDESK_OPERATOR_KEYS: comma-separated files; POPPYDESK_OPERATOR_KEY_PEM: the PEM itself)")
			fs.StringVar(&o.db, "db", "", "the `database`: sqlite:PATH or a PostgreSQL URL (POPPYDESK_OPERATOR_DB; default sqlite:poppydesk-operator.sqlite)")
			fs.StringVar(&o.enrollment, "enrollment", "", "how devices enroll, a `mode`: token or open (POPPYDESK_OPERATOR_ENROLLMENT; default token)")
			fs.IntVar(&o.perHour, "per-hour", 0, "signatures per device per hour, a `number` (POPPYDESK_OPERATOR_PER_HOUR; default 200)")
			fs.IntVar(&o.perDay, "per-day", 0, "signatures per device per day, a `number` (POPPYDESK_OPERATOR_PER_DAY; default 2000)")
			fs.StringVar(&o.clientName, "client-name", "", "the client_name Companies show, a `name` (POPPYDESK_OPERATOR_CLIENT_NAME; default Poppydesk)")
			fs.StringVar(&o.logo, "logo", "", "PNG `file` published at logo.png (POPPYDESK_OPERATOR_LOGO)")
			fs.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with this certificate `file` (POPPYDESK_OPERATOR_TLS_CERT; default: plain HTTP behind a TLS proxy)")
			fs.StringVar(&o.tlsKey, "tls-key", "", "the certificate's key `file` (POPPYDESK_OPERATOR_TLS_KEY)")
			fs.IntVar(&o.enrollPerAddress, "enroll-per-address", 0, "open enrollment: devices per source address per hour, a `number` (POPPYDESK_OPERATOR_ENROLL_PER_ADDRESS; default 5; an IPv6 host's /64 is one address)")
			fs.IntVar(&o.enrollPerNetwork, "enroll-per-network", 0, "open enrollment: devices per network (IPv4 /24, IPv6 /56) per hour, a `number` (POPPYDESK_OPERATOR_ENROLL_PER_NETWORK; default 20)")
			fs.IntVar(&o.enrollPoW, "enroll-pow-bits", 0, "open enrollment: the proof of work each device does, in `bits` (POPPYDESK_OPERATOR_ENROLL_POW_BITS; default 20, -1 for none)")
			fs.Var(&proxies, "trusted-proxy", "a reverse proxy's address or `CIDR` whose X-Forwarded-For names the client (repeatable; POPPYDESK_OPERATOR_TRUSTED_PROXIES, comma-separated)")
			fs.StringVar(&o.metricsListen, "metrics-listen", "", "serve /metrics on this `address` of its own, e.g. 127.0.0.1:9464 (POPPYDESK_OPERATOR_METRICS_LISTEN); "+
				"on the service's listener /metrics needs the bearer token in POPPYDESK_OPERATOR_METRICS_TOKEN")
			fs.DurationVar(&o.drain, "drain", 0, "on SIGTERM, how long (a `time` such as 10s) /readyz answers 503 before the listener closes (POPPYDESK_OPERATOR_DRAIN)")
			fs.StringVar(&o.out, "out", "", "keygen: the key `file` to write")
			fs.IntVar(&o.bits, "bits", operator.DefaultKeyBits, "keygen: the RSA key size in `bits` (2048, 3072 or 4096)")
			fs.StringVar(&o.signFrom, "sign-from", "", "keygen: the `time` the key starts signing: an RFC 3339 time or +DURATION (e.g. +2h); default: at once")
			fs.DurationVar(&o.ttl, "ttl", 24*time.Hour, "enroll-token: how long (a `time` such as 24h) the token is valid")
			fs.IntVar(&o.uses, "uses", 1, "enroll-token: how many devices it enrolls, a `number`")
			fs.StringVar(&o.token, "token", "", "enroll: the enrollment `token` from the operator's administrator")
			devCA := fs.String("dev-ca", "", "enroll: PEM `file` of a CA trusted only for dev host names")
			allowLoopback := fs.Bool("dev-allow-loopback", false, "enroll: dev mode, map *.localhost names to 127.0.0.1")
			return func(ctx context.Context, args []string) error {
				o.keys, o.proxies = keys, proxies
				if len(args) == 0 {
					return errMissing("the operator subcommand: serve, keygen, enroll-token, devices, enroll or status")
				}
				sub, rest := args[0], args[1:]
				if sub == "devices" && len(rest) > 0 {
					if rest[0] != "revoke" {
						return usageError{fmt.Sprintf("operator devices %q: the only action is revoke ID", rest[0])}
					}
					sub, rest = "revoke-device", rest[1:]
				}
				want := 0
				if sub == "enroll" || sub == "revoke-device" {
					want = 1
				}
				switch {
				case len(rest) < want:
					return errMissing(map[string]string{"enroll": "the operator's URL", "revoke-device": "the device ID"}[sub])
				case len(rest) > want:
					return errUnexpected(rest[want])
				}
				switch sub {
				case "serve":
					return o.serve(ctx)
				case "keygen":
					return o.keygen()
				case "enroll-token":
					return o.enrollToken(ctx)
				case "devices":
					return o.devices(ctx)
				case "revoke-device":
					return o.revoke(ctx, rest[0])
				case "enroll":
					cfg := transport.Config{}
					if *allowLoopback {
						cfg.DevHosts = []string{"*.localhost"}
					}
					if *devCA != "" {
						if !*allowLoopback {
							return usageError{"--dev-ca is trusted only for dev host names; add --dev-allow-loopback"}
						}
						certs, err := app.ReadPEMCerts(*devCA)
						if err != nil {
							return err
						}
						cfg.DevRootCAs = certs
					}
					return o.enroll(ctx, cfg, rest[0])
				case "status":
					return o.status(ctx)
				}
				return usageError{fmt.Sprintf("unknown operator subcommand %q", sub)}
			}
		}}
}

type operatorFlags struct {
	env                                *Env
	listen, publicURL, db, enrollment  string
	clientName, logo, tlsCert, tlsKey  string
	metricsListen                      string
	keys, proxies                      []string
	perHour, perDay                    int
	enrollPerAddress, enrollPerNetwork int
	enrollPoW                          int
	drain                              time.Duration
	out, signFrom, token               string
	bits, uses                         int
	ttl                                time.Duration
}

// setting is the flag's value, else the environment's.
func (o *operatorFlags) setting(v, envName, def string) string {
	if v != "" {
		return v
	}
	if e := o.env.Getenv(envName); e != "" {
		return e
	}
	return def
}

func (o *operatorFlags) intSetting(v int, envName string) (int, error) {
	if v != 0 {
		return v, nil
	}
	e := o.env.Getenv(envName)
	if e == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(e)
	if err != nil || n <= 0 {
		return 0, usageError{fmt.Sprintf("%s=%q is not a positive number", envName, e)}
	}
	return n, nil
}

func (o *operatorFlags) dsn() string {
	return o.setting(o.db, "POPPYDESK_OPERATOR_DB", "sqlite:poppydesk-operator.sqlite")
}

// loadKeys reads the keys from --key files, POPPYDESK_OPERATOR_KEYS (files) and
// POPPYDESK_OPERATOR_KEY_PEM (the PEM text itself, as a secrets manager injects it).
func (o *operatorFlags) loadKeys() (*operator.KeySet, error) {
	files := append([]string(nil), o.keys...)
	if e := o.env.Getenv("POPPYDESK_OPERATOR_KEYS"); e != "" {
		for _, f := range strings.Split(e, ",") {
			if f = strings.TrimSpace(f); f != "" {
				files = append(files, f)
			}
		}
	}
	var keys []*operator.Key
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading the key file: %w", err)
		}
		k, err := operator.ParseKeys(b, f)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k...)
	}
	if e := o.env.Getenv("POPPYDESK_OPERATOR_KEY_PEM"); e != "" {
		k, err := operator.ParseKeys([]byte(e), "POPPYDESK_OPERATOR_KEY_PEM")
		if err != nil {
			return nil, err
		}
		keys = append(keys, k...)
	}
	return operator.NewKeySet(keys)
}

func (o *operatorFlags) serve(ctx context.Context) error {
	log := slog.New(slog.NewJSONHandler(o.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	publicURL := o.setting(o.publicURL, "POPPYDESK_OPERATOR_PUBLIC_URL", "")
	if publicURL == "" {
		return errRequiredFlags("--public-url (or POPPYDESK_OPERATOR_PUBLIC_URL)")
	}
	perHour, err := o.intSetting(o.perHour, "POPPYDESK_OPERATOR_PER_HOUR")
	if err != nil {
		return err
	}
	perDay, err := o.intSetting(o.perDay, "POPPYDESK_OPERATOR_PER_DAY")
	if err != nil {
		return err
	}
	drain := o.drain
	if e := o.env.Getenv("POPPYDESK_OPERATOR_DRAIN"); drain == 0 && e != "" {
		if drain, err = time.ParseDuration(e); err != nil {
			return usageError{fmt.Sprintf("POPPYDESK_OPERATOR_DRAIN=%q is not a duration such as 10s", e)}
		}
	}
	var limits [2]int
	for i, l := range []struct {
		v   int
		env string
	}{{o.enrollPerAddress, "POPPYDESK_OPERATOR_ENROLL_PER_ADDRESS"}, {o.enrollPerNetwork, "POPPYDESK_OPERATOR_ENROLL_PER_NETWORK"}} {
		if limits[i], err = o.intSetting(l.v, l.env); err != nil {
			return err
		}
	}
	pow := o.enrollPoW
	if e := o.env.Getenv("POPPYDESK_OPERATOR_ENROLL_POW_BITS"); pow == 0 && e != "" {
		if pow, err = strconv.Atoi(e); err != nil {
			return usageError{fmt.Sprintf("POPPYDESK_OPERATOR_ENROLL_POW_BITS=%q is not a number of bits", e)}
		}
	}
	trusted, err := o.trustedProxies()
	if err != nil {
		return err
	}
	keys, err := o.loadKeys()
	if err != nil {
		return err
	}
	var logo []byte
	if f := o.setting(o.logo, "POPPYDESK_OPERATOR_LOGO", ""); f != "" {
		if logo, err = os.ReadFile(f); err != nil {
			return fmt.Errorf("reading the logo: %w", err)
		}
	}
	dsn := o.dsn()
	st, err := operator.OpenStore(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := operator.New(operator.Config{PublicURL: publicURL, ClientName: o.setting(o.clientName, "POPPYDESK_OPERATOR_CLIENT_NAME", ""),
		Logo: logo, Keys: keys, Store: st, Enrollment: o.setting(o.enrollment, "POPPYDESK_OPERATOR_ENROLLMENT", ""),
		PerHour: perHour, PerDay: perDay, EnrollPerAddress: limits[0], EnrollPerNetwork: limits[1], EnrollPoWBits: pow,
		TrustedProxies: trusted, MetricsToken: o.env.Getenv("POPPYDESK_OPERATOR_METRICS_TOKEN"), Logger: log})
	if err != nil {
		return usageError{err.Error()}
	}
	now := time.Now()
	for _, k := range keys.Keys() {
		attrs := []any{"kid", k.Kid, "bits", k.Bits, "source", k.Source, "sign_from", when(k.SignFrom)}
		if ra := keys.RemoveAfter(k); !ra.IsZero() {
			attrs = append(attrs, "may_be_removed_after", ra.Format(time.RFC3339))
		}
		if cur := keys.Current(now); cur == k {
			attrs = append(attrs, "signing", true)
		}
		log.Info("key", attrs...)
	}
	listen := o.setting(o.listen, "POPPYDESK_OPERATOR_LISTEN", ":8080")
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	cert, key := o.setting(o.tlsCert, "POPPYDESK_OPERATOR_TLS_CERT", ""), o.setting(o.tlsKey, "POPPYDESK_OPERATOR_TLS_KEY", "")
	if (cert == "") != (key == "") {
		ln.Close()
		return errRequiredFlags("--tls-cert", "--tls-key")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			ln.Close()
			return fmt.Errorf("loading the TLS certificate: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	var metricsAddr string
	if ml := o.setting(o.metricsListen, "POPPYDESK_OPERATOR_METRICS_LISTEN", ""); ml != "" {
		mln, err := net.Listen("tcp", ml)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listening for /metrics on %s: %w", ml, err)
		}
		metricsAddr = mln.Addr().String()
		ms := &http.Server{Handler: srv.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: hs.ErrorLog}
		go ms.Serve(mln)
		defer ms.Close()
	}
	pctx, stopPrune := context.WithCancel(context.Background())
	defer stopPrune()
	go srv.Prune(pctx, 10*time.Minute)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	info := operatorServeInfo{Listen: ln.Addr().String(), MetricsListen: metricsAddr, PublicURL: publicURL, ClientID: srv.ClientID(), Database: databaseKind(st)}
	if k := keys.Current(now); k != nil {
		info.SigningKid = k.Kid
	}
	line, _ := json.Marshal(info)
	fmt.Fprintf(o.env.Stdout, "%s\n", line)
	log.Info("operator started", "listen", info.Listen, "public_url", publicURL, "client_id", info.ClientID, "database", info.Database)
	select {
	case err := <-served:
		return fmt.Errorf("serving stopped: %w", err)
	case <-ctx.Done():
	}
	// SIGTERM: /readyz fails first so the load balancer stops sending, then in-flight requests
	// finish.
	srv.Drain()
	log.Info("draining", "for", drain.String())
	if drain > 0 {
		t := time.NewTimer(drain)
		<-t.C
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	stats := srv.Stats()
	log.Info("operator stopped", "signatures", stats.Signatures, "refused", stats.Refused, "enrolled", stats.Enrolled)
	return err
}

// trustedProxies reads --trusted-proxy and POPPYDESK_OPERATOR_TRUSTED_PROXIES: addresses or
// CIDR prefixes.
func (o *operatorFlags) trustedProxies() ([]netip.Prefix, error) {
	all := append([]string(nil), o.proxies...)
	if e := o.env.Getenv("POPPYDESK_OPERATOR_TRUSTED_PROXIES"); e != "" {
		all = append(all, strings.Split(e, ",")...)
	}
	var out []netip.Prefix
	for _, v := range all {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil {
				return nil, usageError{fmt.Sprintf("the trusted proxy %q is neither an IP address nor a CIDR prefix such as 10.0.0.0/8", v)}
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func databaseKind(st *operator.Store) string {
	if st.Postgres() {
		return "postgresql"
	}
	return "sqlite"
}

func when(t time.Time) string {
	if t.IsZero() {
		return "start"
	}
	return t.Format(time.RFC3339)
}

func (o *operatorFlags) keygen() error {
	if o.out == "" {
		return errRequiredFlags("--out")
	}
	var from time.Time
	switch s := o.signFrom; {
	case s == "":
	case strings.HasPrefix(s, "+"):
		d, err := time.ParseDuration(s[1:])
		if err != nil {
			return usageError{fmt.Sprintf("--sign-from %q: +DURATION such as +2h", s)}
		}
		from = time.Now().Add(d).Truncate(time.Second)
	default:
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return usageError{fmt.Sprintf("--sign-from %q: an RFC 3339 time such as 2026-05-02T12:00:00Z, or +DURATION", s)}
		}
		from = t
	}
	pemData, kid, err := operator.GenerateKey(o.bits, from)
	if err != nil {
		return usageError{err.Error()}
	}
	f, err := os.OpenFile(o.out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing the key (an existing file is never overwritten): %w", err)
	}
	if _, err := f.Write(pemData); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(o.env.Stdout, "wrote %s: RSA %d bits, kid %s, signs from %s\n", o.out, o.bits, kid, when(from))
	if !from.IsZero() {
		fmt.Fprintf(o.env.Stdout, "Deploy it now next to the current key: it is published at once and signs from %s.\n", from.Format(time.RFC3339))
	}
	fmt.Fprintln(o.env.Stdout, "Keep the file in your secrets manager (docs/OPERATOR.md); it is the operator's private key.")
	return nil
}

func (o *operatorFlags) enrollToken(ctx context.Context) error {
	if o.uses <= 0 || o.ttl <= 0 {
		return usageError{"--uses and --ttl must be positive"}
	}
	st, err := operator.OpenStore(ctx, o.dsn())
	if err != nil {
		return err
	}
	defer st.Close()
	tok := "ppd_enroll_" + identity.NewID(32)
	now := time.Now()
	if err := st.AddEnrollToken(ctx, tok, now, now.Add(o.ttl), o.uses); err != nil {
		return fmt.Errorf("storing the token: %w", err)
	}
	fmt.Fprintln(o.env.Stdout, tok)
	fmt.Fprintf(o.env.Stderr, "The token enrolls %d device(s) until %s: poppydesk operator enroll URL --token TOKEN\n", o.uses, now.Add(o.ttl).UTC().Format(time.RFC3339))
	return nil
}

// devices lists the enrolled devices: ID, the UTC day each enrolled, and whether it is revoked
// (the operator keeps days, not times: docs/OPERATOR.md).
func (o *operatorFlags) devices(ctx context.Context) error {
	st, err := operator.OpenStore(ctx, o.dsn())
	if err != nil {
		return err
	}
	defer st.Close()
	ds, err := st.Devices(ctx)
	if err != nil {
		return fmt.Errorf("listing the devices: %w", err)
	}
	w := tabwriter.NewWriter(o.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "DEVICE\tENROLLED\tSTATUS")
	active := 0
	for _, d := range ds {
		status := "active"
		if !d.Revoked.IsZero() {
			status = "revoked " + d.Revoked.Format("2006-01-02")
		} else {
			active++
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", d.ID, d.Enrolled.Format("2006-01-02"), status)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(o.env.Stderr, "%d devices, %d active; revoke one with: poppydesk operator devices revoke DEVICE\n", len(ds), active)
	return nil
}

func (o *operatorFlags) revoke(ctx context.Context, id string) error {
	st, err := operator.OpenStore(ctx, o.dsn())
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Revoke(ctx, id, time.Now()); err != nil {
		if errors.Is(err, operator.ErrUnknownDevice) {
			return fmt.Errorf("no enrolled device %s (or it is already revoked)", id)
		}
		return err
	}
	fmt.Fprintf(o.env.Stdout, "revoked %s: its requests are refused from now on\n", id)
	return nil
}

func (o *operatorFlags) enroll(ctx context.Context, cfg transport.Config, url string) error {
	secrets, err := o.env.OpenSecrets(ctx)
	if err != nil {
		return err
	}
	paths, err := o.env.Paths()
	if err == nil {
		err = paths.Create()
	}
	if err != nil {
		return fmt.Errorf("finding Poppydesk's data folder failed: %w", err)
	}
	st, err := vault.OpenState(ctx, filepath.Join(paths.Data, app.StateFile), vault.StateOptions{})
	if err != nil {
		return fmt.Errorf("opening the state database failed: %w; close a Poppydesk window that holds it", err)
	}
	defer st.Close()
	tr, err := transport.New(cfg)
	if err != nil {
		return err
	}
	defer tr.Close()
	b, err := app.EnrollOperator(ctx, tr.NoRedirectClient(), secrets, st, url, o.token, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.env.Stdout, "enrolled as %s with %s; Poppydesk now signs as %s (restart an open window)\n", b.DeviceID, b.Operator, b.ClientID)
	return nil
}

func (o *operatorFlags) status(ctx context.Context) error {
	secrets, err := o.env.OpenSecrets(ctx)
	if err != nil {
		return err
	}
	b, err := secrets.LoadDevice(ctx)
	if err != nil {
		fmt.Fprintln(o.env.Stdout, "not enrolled with an operator: Poppydesk signs with its own identity (`poppydesk identity export`)")
		return nil
	}
	fmt.Fprintf(o.env.Stdout, "enrolled with %s as %s since %s; client_id %s\n", b.Operator, b.DeviceID, b.Enrolled.Format(time.RFC3339), b.ClientID)
	return nil
}
