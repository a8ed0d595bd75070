package cli

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

func discoverCommand() command {
	return command{name: "discover", summary: "Discover and verify a Company (spec 3): print it as JSON, or name the failed check and spec section.",
		usage: "DOMAIN [--dev-ca FILE] [--dev-allow-loopback]",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			devCA := fs.String("dev-ca", "", "PEM `file` of a CA trusted only for dev host names (the reference Company's CA)")
			allowLoopback := fs.Bool("dev-allow-loopback", false, "dev mode: map *.localhost names to 127.0.0.1 (nothing else may reach loopback)")
			return func(ctx context.Context, args []string) error {
				switch {
				case len(args) == 0:
					return errMissing("the Company's DOMAIN, e.g. example.com")
				case len(args) > 1:
					return errUnexpected(args[1])
				}
				cfg := transport.Config{}
				if *allowLoopback {
					cfg.DevHosts = []string{"*.localhost"}
				}
				if *devCA != "" {
					if !*allowLoopback {
						return errFlagNeeds("--dev-ca", "--dev-allow-loopback", "a dev CA is trusted only for dev host names")
					}
					certs, err := readPEMCerts(*devCA)
					if err != nil {
						return err
					}
					cfg.DevRootCAs = certs
				}
				return discover(ctx, cfg, args[0], env.Stdout)
			}
		}}
}

func readPEMCerts(path string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the dev CA file: %w", err)
	}
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("the dev CA file %s holds an invalid certificate: %w", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the dev CA file %s holds no PEM certificate", path)
	}
	return out, nil
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
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(discoverOutput{Organization: c.Organization, Identifier: c.Identifier, Issuer: c.Issuer, Version: c.Version,
		DocumentURL: c.DocumentURL, SignIn: c.SignIn, Channels: c.Channels, Extensions: c.Extensions, Scopes: c.Scopes})
}
