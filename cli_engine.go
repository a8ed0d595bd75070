package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// engineState adapts *vault.State to engine.State. The settings, EndSession and
// DeleteCacheEntry methods are the vault's own (promoted); the others copy between the vault's
// record types and the engine's, which have the same fields (the engine does not import the
// vault, DESIGN.md).
type engineState struct{ *vault.State }

var _ engine.State = engineState{}

func (s engineState) GetCacheEntry(ctx context.Context, url string) (engine.CacheRecord, error) {
	e, err := s.State.GetCacheEntry(ctx, url)
	return engine.CacheRecord(e), err
}

func (s engineState) PutCacheEntry(ctx context.Context, e engine.CacheRecord) error {
	return s.State.PutCacheEntry(ctx, store.CacheEntry(e))
}

func (s engineState) PutCompany(ctx context.Context, c engine.CompanyRecord) error {
	return s.State.PutCompany(ctx, store.Company(c))
}

func (s engineState) GetCompany(ctx context.Context, identifier string) (engine.CompanyRecord, error) {
	c, err := s.State.GetCompany(ctx, identifier)
	return engine.CompanyRecord(c), err
}

func (s engineState) AddSession(ctx context.Context, ss engine.SessionRecord) error {
	return s.State.AddSession(ctx, store.Session(ss))
}

func (s engineState) AddExchange(ctx context.Context, e engine.ExchangeRecord) (int64, error) {
	return s.State.AddExchange(ctx, store.Exchange(e))
}

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
	cfg.State = engineState{st}
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
