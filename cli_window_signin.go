package main

// The window's Sign-in and Companies screens (app.SignIn, app.Companies): a runtime hook that
// builds the OAuth client (agentcore/oauth) over the window's engine and binds the two services.
// During bindingsBuild it only appends zero-value structs.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/pkg/browser"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

// signInDeps is what the Sign-in and Companies screens need from the window's engine wiring.
type signInDeps struct {
	Engine  *engine.Engine
	State   *vault.State  // the state database the engine uses (Company list, forget)
	Secrets store.Secrets // the secret store the engine uses (the OS keyring)
	// OAuth is the engine's OAuth client when the engine wiring built one (it must be the same
	// client that refreshes tokens, so refreshes of one account stay serialized); nil: built here.
	OAuth *oauth.Client
	// Requests are the model's sign-in requests (agentcore/modelapi); nil: none are shown.
	Requests modelapi.SignInRequests
	// Opener opens URLs in the User's browser; nil: the desktop opener.
	Opener app.URLOpener
}

// windowSignInDeps returns the engine wiring of the window, or ok=false when the window runs
// without an engine. The code that opens the window's engine (cli_demo.go) sets it; while it is
// nil the two screens are bound but say that no engine is connected.
var windowSignInDeps func(rt *windowRuntime) (deps signInDeps, ok bool)

func init() { runtimeHooks = append(runtimeHooks, signInHook) }

func signInHook(ctx context.Context, rt *windowRuntime, o *windowOptions) error {
	if bindingsBuild {
		rt.services = append(rt.services, &app.SignIn{}, &app.Companies{})
		return nil
	}
	var deps signInDeps
	ok := false
	if windowSignInDeps != nil {
		deps, ok = windowSignInDeps(rt)
	}
	if !ok {
		rt.log.Warn("the Sign-in and Companies screens have no engine in this run")
		rt.services = append(rt.services, &app.SignIn{}, &app.Companies{})
		return nil
	}
	if deps.Requests == nil && windowSignInRequests != nil {
		// The model's requests, recorded by the model interface (cli_window_modelapi.go, whose
		// hook runs before this one).
		deps.Requests = windowSignInRequests
	}
	signIn, companies, err := buildSignInServices(rt, deps)
	if err != nil {
		return err
	}
	rt.services = append(rt.services, signIn, companies)
	return nil
}

// buildSignInServices builds the OAuth client (unless deps has one) and the two services.
func buildSignInServices(rt *windowRuntime, deps signInDeps) (*app.SignIn, *app.Companies, error) {
	e := deps.Engine
	client := deps.OAuth
	if client == nil {
		var err error
		client, err = oauth.New(oauth.Config{Transport: e.Transport(), Identity: e.Agent(), Secrets: deps.Secrets, Logger: e.Logger()})
		if err != nil {
			return nil, nil, fmt.Errorf("building the sign-in client: %w", err)
		}
	}
	opener := deps.Opener
	if opener == nil {
		opener = app.OpenerFunc(openInBrowser)
	}
	dir := &windowDirectory{e: e, st: deps.State, secrets: deps.Secrets}
	signIn := app.NewSignIn(app.SignInConfig{Companies: dir, OAuth: client, Requests: deps.Requests, Opener: opener,
		Logo: app.NewLogoFetcher(e.Transport().NoRedirectClient()), Emitter: rt.relay, Context: rt.lifecycle.Context(),
		Go: rt.lifecycle.Go, Log: rt.log})
	companies := app.NewCompanies(app.CompaniesConfig{Directory: dir, OAuth: client, Emitter: rt.relay,
		Context: rt.lifecycle.Context(), Log: rt.log})
	return signIn, companies, nil
}

// windowDirectory adapts the engine, the state database and the secret store to
// app.CompanyDirectory.
type windowDirectory struct {
	e       *engine.Engine
	st      *vault.State
	secrets store.Secrets
}

func (d *windowDirectory) Company(ctx context.Context, id string) (*discovery.Company, error) {
	return d.e.Company(ctx, id)
}

func (d *windowDirectory) Discover(ctx context.Context, domain string) (*discovery.Company, error) {
	return d.e.Discover(ctx, domain)
}

func (d *windowDirectory) Known(ctx context.Context) ([]string, error) {
	cs, err := d.st.ListCompanies(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Identifier)
	}
	return out, nil
}

// Forget deletes the Company's secret bundles (every account, and the signed-out identity with
// its User ID) and then its state records (vault.State.ForgetCompany).
func (d *windowDirectory) Forget(ctx context.Context, id string) error {
	pairs, err := d.secrets.Companies(ctx)
	if err != nil {
		return fmt.Errorf("listing the keyring items failed: %w", err)
	}
	for _, p := range pairs {
		if p[0] != id {
			continue
		}
		if err := d.secrets.DeleteCompany(ctx, p[0], p[1]); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleting the keyring item of account %q failed: %w", p[1], err)
		}
	}
	return d.st.ForgetCompany(ctx, id)
}

// openInBrowser opens url in the User's default browser with github.com/pkg/browser, the
// library Wails's runtime.BrowserOpenURL uses on Linux (xdg-open), called directly so that a
// failure reaches the screen (Wails only logs it) and no Wails context is needed. xdg-open may
// keep running while the browser starts: after openWait without an error the URL counts as
// opened.
func openInBrowser(url string) error {
	done := make(chan error, 1)
	go func() { done <- browser.OpenURL(url) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("no browser could be started (%v)", err)
		}
		return nil
	case <-time.After(openWait):
		return nil
	}
}

const openWait = 3 * time.Second

func init() {
	// The opener's output must not reach Poppydesk's stdout (the e2e bridge prints its URL there).
	browser.Stdout, browser.Stderr = io.Discard, io.Discard
}
