package cli

import (
	"flag"

	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
)

// devFlags are developer mode's flags, the same in every subcommand that talks to Companies
// (discover, check, window, demo): the Companies under development and the CA trusted for
// their hosts only (app/host_devmode.go has the host rule).
type devFlags struct {
	companies listFlag
	ca        string
	// operators are operators under development (the window only): reachable on loopback with
	// the --dev-ca, and, unlike Companies, no reason to publish an identity of Poppydesk's own,
	// since an operator publishes the identity (Get started with a build's default operator
	// that runs on this computer).
	operators listFlag
}

// registerOperator adds --dev-operator (the window's flags).
func (d *devFlags) registerOperator(fs *flag.FlagSet) {
	fs.Var(&d.operators, "dev-operator", "developer mode: an operator under development, by `domain` (host[:port]; localhost, *.localhost or 127.0.0.1), repeatable; it may be reached on loopback, with the --dev-ca trusted for it, and Poppydesk publishes no identity of its own for it")
}

func (d *devFlags) register(fs *flag.FlagSet) {
	fs.Var(&d.companies, "dev-company", "developer mode: a Company under development, by `domain` (host[:port]; localhost, *.localhost or 127.0.0.1), repeatable; its host and subdomains may reach loopback")
	fs.StringVar(&d.ca, "dev-ca", "", "developer mode: PEM `file` of the CA that issued the certificates of the --dev-company Companies, trusted for their hosts only")
}

// developer is the flags as app.Developer (zero when no Company is named).
func (d *devFlags) developer() (app.Developer, error) {
	if len(d.operators) > 0 {
		return d.withOperators()
	}
	if len(d.companies) == 0 {
		if d.ca != "" {
			return app.Developer{}, usageError{"--dev-ca is trusted only for the hosts of Companies under development; name them with --dev-company DOMAIN (discover also takes --dev-allow-loopback for the reference Company)"}
		}
		return app.Developer{}, nil
	}
	dev, err := app.DeveloperFrom(app.DeveloperSettings{Companies: d.companies, CAFile: d.ca})
	if err != nil {
		return app.Developer{}, usageError{err.Error()}
	}
	return dev, nil
}

// transport is the flags as the engine's HTTP policy.
func (d *devFlags) transport() (transport.Config, error) {
	dev, err := d.developer()
	if err != nil {
		return transport.Config{}, err
	}
	return transport.Config{DevHosts: dev.Hosts, DevRootCAs: dev.RootCAs}, nil
}

// withOperators is developer mode with operators under development: their hosts join the
// Companies' (if any), and the --dev-ca is trusted for all of them. Poppydesk then publishes no
// identity of its own, with Companies named or not: the identity Companies see is the one the
// operator publishes (Get started enrolls with it), so a developer tries their Company and
// their operator together as a user of that operator meets them.
func (d *devFlags) withOperators() (app.Developer, error) {
	var dev app.Developer
	if len(d.companies) > 0 {
		var err error
		if dev, err = app.DeveloperFrom(app.DeveloperSettings{Companies: d.companies, CAFile: d.ca}); err != nil {
			return app.Developer{}, usageError{err.Error()}
		}
		dev.AgentListen = ""
	} else if d.ca != "" {
		certs, err := app.ReadPEMCerts(d.ca)
		if err != nil {
			return app.Developer{}, usageError{err.Error()}
		}
		dev.RootCAs, dev.CAFile = certs, d.ca
	}
	hosts, err := app.DeveloperHosts(d.operators)
	if err != nil {
		return app.Developer{}, usageError{err.Error()}
	}
	dev.Hosts = append(dev.Hosts, hosts...)
	return dev, nil
}
