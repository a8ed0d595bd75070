package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

func discoverCommand() command {
	return command{name: "discover", summary: "Discover and verify a Company (spec 3): print it as JSON, or name the failed check and spec section.",
		usage: "DOMAIN [--dev-company DOMAIN]... [--dev-ca FILE]",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			var dev devFlags
			dev.register(fs)
			allowLoopback := fs.Bool("dev-allow-loopback", false, "developer mode for the reference Company: map *.localhost names to 127.0.0.1 (prefer --dev-company)")
			return func(ctx context.Context, args []string) error {
				switch {
				case len(args) == 0:
					return errMissing("the Company's DOMAIN, e.g. example.com")
				case len(args) > 1:
					return errUnexpected(args[1])
				}
				if *allowLoopback && len(dev.companies) == 0 {
					dev.companies = listFlag{args[0]}
					if h, _, err := net.SplitHostPort(args[0]); err == nil && !strings.HasSuffix(h, ".localhost") {
						dev.companies = nil
					}
				}
				cfg, err := dev.transport()
				if err != nil {
					return err
				}
				if *allowLoopback {
					cfg.DevHosts = append(cfg.DevHosts, "*.localhost")
				}
				return discover(ctx, cfg, args[0], env.Stdout)
			}
		}}
}

// discoverOutput is what `poppydesk discover` prints.
type discoverOutput struct {
	Organization discovery.Organization                `json:"organization"`
	Identifier   string                                `json:"identifier"`
	Issuer       string                                `json:"issuer,omitempty"`
	Version      string                                `json:"version"`
	DocumentURL  string                                `json:"document_url"`
	SignIn       discovery.SignIn                      `json:"sign_in"`
	Channels     discovery.Channels                    `json:"channels"`
	Extensions   map[string][]discovery.ExtensionEntry `json:"extensions,omitempty"`
	Scopes       []discovery.Scope                     `json:"scopes,omitempty"`
}

func discover(ctx context.Context, cfg transport.Config, domain string, stdout io.Writer) error {
	tr, err := transport.New(cfg)
	if err != nil {
		return err
	}
	defer tr.Close()
	d, err := discovery.New(discovery.Config{Transport: tr})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := d.Discover(ctx, domain)
	if err != nil {
		if h := discovery.DeveloperHint(err, domain); h != "" {
			return fmt.Errorf("%w\nhint: %s", err, h)
		}
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(discoverOutput{Organization: c.Organization, Identifier: c.Identifier, Issuer: c.Issuer, Version: c.Version,
		DocumentURL: c.DocumentURL, SignIn: c.SignIn, Channels: c.Channels, Extensions: c.Extensions, Scopes: c.Scopes})
}
