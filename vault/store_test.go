package vault_test

import (
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// The vault implements agentcore/store's interfaces with its records, so the engine, the approval
// queue and the conversation manager take it as it is.
var (
	_ store.KV              = (*vault.Keyring)(nil)
	_ store.Settings        = (*vault.State)(nil)
	_ store.EngineState     = (*vault.State)(nil)
	_ store.Approvals       = (*vault.State)(nil)
	_ store.Transcripts     = (*vault.State)(nil)
	_ store.FeedbackReports = (*vault.State)(nil)
)
