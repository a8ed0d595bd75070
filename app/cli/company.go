package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
)

// companyServeInfo is the one JSON line `poppydesk company serve` prints.
type companyServeInfo struct {
	Listen       string   `json:"listen"`
	Domain       string   `json:"domain"`
	Origin       string   `json:"origin"`
	PoppyJSON    string   `json:"poppy_json"`
	Issuer       string   `json:"issuer"`
	Identifier   string   `json:"identifier"`
	AgentOrigin  string   `json:"agent_origin"`
	CACert       string   `json:"ca_cert"`
	AgentCA      string   `json:"agent_ca,omitempty"`
	DevHosts     []string `json:"dev_hosts"`
	Faults       []string `json:"faults"`
	DiscoverHint string   `json:"discover_hint"`
}

func companyCommand() command {
	return command{name: "company", summary: "Run the reference Company (a spec-faithful Poppy 0.4 Company on loopback) for demos and tests.",
		usage: "serve [--listen ADDR] [--state DIR] [--fault NAME]... [--agent-host HOST]... [--agent-ca FILE]",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			listen := fs.String("listen", "127.0.0.1:0", "loopback `address` to listen on")
			var faults listFlag
			fs.Var(&faults, "fault", "switch on the fault `name` (repeatable): "+strings.Join(refcompany.Faults, ", "))
			var agentHosts listFlag
			fs.Var(&agentHosts, "agent-host", "a loopback `host` name where a Personal Agent's metadata is published, e.g. an operator under development (repeatable)")
			agentCA := fs.String("agent-ca", "", "PEM `file` of the CA that signed the certificates of a Personal Agent's client metadata: on --agent-host names (an operator under development) or on agent.localhost (Poppydesk's developer mode; default: the developer CA of Poppydesk on this machine, when there is one)")
			state := fs.String("state", "", "`folder` where the Company keeps its CA and its address across starts, so clients that trust it and a client_id registered with it keep working (default: a new CA and port each start)")
			return func(ctx context.Context, args []string) error {
				switch {
				case len(args) == 0 || args[0] != "serve":
					return errSubcommand("serve", args)
				case len(args) > 1:
					return errUnexpected(args[1])
				}
				if err := checkFaults(faults, false); err != nil {
					return err
				}
				opts := refcompany.Options{Listen: *listen, Faults: faults, AgentHosts: agentHosts}
				trusted := *agentCA
				if trusted == "" {
					// Poppydesk's developer CA on this machine, when developer mode made one.
					if p, err := env.Paths(); err == nil {
						if _, err := os.Stat(app.DevCAPath(p)); err == nil {
							trusted = app.DevCAPath(p)
						}
					}
				}
				if trusted != "" {
					certs, err := app.ReadPEMCerts(trusted)
					if err != nil {
						return err
					}
					opts.AgentRootCAs = certs
				}
				listenSet := false
				fs.Visit(func(f *flag.Flag) { listenSet = listenSet || f.Name == "listen" })
				if *state != "" {
					ca, err := refcompany.LoadOrCreateCA(*state, time.Now())
					if err != nil {
						return err
					}
					opts.CA = ca
					if b, err := os.ReadFile(filepath.Join(*state, companyListenFile)); err == nil && !listenSet {
						opts.Listen = strings.TrimSpace(string(b))
					}
				}
				return companyServe(ctx, opts, *state, trusted, env.Stdout)
			}
		}}
}

// companyListenFile is where `company serve --state` keeps its address.
const companyListenFile = "listen"

// companyServe serves the reference Company until ctx ends. With state ("" for none) it keeps
// its address there, and its CA certificate (opts.CA, kept by LoadOrCreateCA); agentCA is the
// file of the Personal Agent CA it trusts ("" for none).
func companyServe(ctx context.Context, opts refcompany.Options, state, agentCA string, stdout io.Writer) error {
	s, err := refcompany.New(opts)
	if err != nil {
		return errInvalid("--listen", err)
	}
	if err := s.Start(ctx); err != nil {
		if state != "" {
			return fmt.Errorf("%w (the address kept in %s; pass --listen 127.0.0.1:0 for another port, and register the new client address)", err, filepath.Join(state, companyListenFile))
		}
		return err
	}
	defer s.Close()
	dir := state
	if dir == "" {
		if dir, err = os.MkdirTemp("", "poppydesk-company-"); err != nil {
			return fmt.Errorf("creating a temporary folder for the CA certificate: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.WriteFile(filepath.Join(state, companyListenFile), []byte(fmt.Sprintf("127.0.0.1:%d\n", s.Port)), 0o644); err != nil {
		return fmt.Errorf("keeping the address in %s: %w", state, err)
	}
	caPath, err := s.WriteCAFile(dir)
	if err != nil {
		return fmt.Errorf("writing the CA certificate: %w", err)
	}
	info := companyServeInfo{
		Listen: fmt.Sprintf("127.0.0.1:%d", s.Port), Domain: s.Domain, Origin: s.Origin(), PoppyJSON: s.PoppyJSONURL(),
		Issuer: s.Issuer(), Identifier: s.Identifier(), AgentOrigin: s.URL(refcompany.AgentHost, ""), CACert: caPath, AgentCA: agentCA,
		DevHosts: refcompany.DevHosts, Faults: append([]string{}, s.ActiveFaults()...),
		DiscoverHint: fmt.Sprintf("poppydesk discover %s --dev-ca %s --dev-allow-loopback", s.Domain, caPath),
	}
	line, err := json.Marshal(info)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
