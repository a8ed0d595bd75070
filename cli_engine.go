package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/vault"
)

// openEngine opens the state database at statePath and builds the engine over it and the OS
// keyring. cfg.State is set here; cfg.Secrets defaults to the OS keyring (openSecrets). The
// returned func closes the engine (recording the end of its Sessions and storing the queued
// exchanges) and then the database.
func openEngine(ctx context.Context, statePath string, cfg engine.Config) (*engine.Engine, *vault.State, func(context.Context) error, error) {
	if cfg.Secrets == nil {
		secrets, err := openSecrets(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		cfg.Secrets = secrets
	}
	st, err := vault.OpenState(ctx, statePath, vault.StateOptions{Now: cfg.Now, Logger: cfg.Logger})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("opening the state database: %w", err)
	}
	cfg.State = st
	e, err := engine.New(cfg)
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	closeAll := func(ctx context.Context) error {
		return errors.Join(e.Close(ctx), st.Close())
	}
	return e, st, closeAll, nil
}
