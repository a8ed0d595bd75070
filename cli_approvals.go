package main

import (
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/vault"
)

// openApprovals builds the approval queue over the engine and the state database opened by
// openEngine. The caller runs Recover at start (Operations 7: approvals with an unknown outcome
// are sent again with the same approval).
func openApprovals(cfg approvals.Config, st *vault.State) (*approvals.Queue, error) {
	cfg.Store = st
	return approvals.New(cfg)
}
