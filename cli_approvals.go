package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// approvalStore adapts *vault.State to approvals.Store: the approval queue's records are the
// vault's approval records field for field (the queue does not import the vault, DESIGN.md), and
// store.ErrConflict is reported as approvals.ErrConflict. Every method returns after the vault's
// transaction committed (synchronous=FULL), which is what write-before-send relies on.
type approvalStore struct{ st *vault.State }

var _ approvals.Store = approvalStore{}

func conflict(err error) error {
	if err != nil && errors.Is(err, store.ErrConflict) && !errors.Is(err, approvals.ErrConflict) {
		return fmt.Errorf("%w: %w", approvals.ErrConflict, err)
	}
	return err
}

func (s approvalStore) CreateApproval(ctx context.Context, a approvals.Record, first approvals.Revision) error {
	return conflict(s.st.CreateApproval(ctx, store.Approval{ID: a.ID, Company: a.Company, Account: a.Account, SID: a.SID,
		Interface: a.Interface, Request: a.Request, State: a.State, Created: a.Created, Updated: a.Updated}, store.Revision(first)))
}

func (s approvalStore) AddRevision(ctx context.Context, id string, r approvals.Revision, newState string) error {
	return conflict(s.st.AddRevision(ctx, id, store.Revision(r), newState))
}

func (s approvalStore) TransitionApproval(ctx context.Context, id, from string, d approvals.Decision) error {
	return conflict(s.st.TransitionApproval(ctx, id, from, store.Decision(d)))
}

func fromVault(a store.Approval) approvals.Record {
	r := approvals.Record{ID: a.ID, Company: a.Company, Account: a.Account, SID: a.SID, Interface: a.Interface,
		Request: a.Request, State: a.State, Created: a.Created, Updated: a.Updated}
	for _, rv := range a.Revisions {
		r.Revisions = append(r.Revisions, approvals.Revision(rv))
	}
	return r
}

func (s approvalStore) GetApproval(ctx context.Context, id string) (approvals.Record, error) {
	a, err := s.st.GetApproval(ctx, id)
	if err != nil {
		return approvals.Record{}, err
	}
	return fromVault(a), nil
}

func (s approvalStore) ListApprovals(ctx context.Context, states ...string) ([]approvals.Record, error) {
	as, err := s.st.ListApprovals(ctx, states...)
	if err != nil {
		return nil, err
	}
	out := make([]approvals.Record, 0, len(as))
	for _, a := range as {
		out = append(out, fromVault(a))
	}
	return out, nil
}

func (s approvalStore) Decisions(ctx context.Context, id string) ([]approvals.Decision, error) {
	ds, err := s.st.Decisions(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]approvals.Decision, 0, len(ds))
	for _, d := range ds {
		out = append(out, approvals.Decision(d))
	}
	return out, nil
}

// openApprovals builds the approval queue over the engine and the state database opened by
// openEngine. The caller runs Recover at start (Operations 7: approvals with an unknown outcome
// are sent again with the same approval).
func openApprovals(cfg approvals.Config, st *vault.State) (*approvals.Queue, error) {
	cfg.Store = approvalStore{st: st}
	return approvals.New(cfg)
}
