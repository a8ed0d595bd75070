// Package store defines what Poppydesk must remember: the storage interfaces the vault
// implements and the records they carry, each defined once (docs/DESIGN.md: vault imports only the
// agentcore package that defines the storage interfaces and records it implements). The engine,
// the approval queue and the conversation manager name these types directly; the app passes
// *vault.State and vault.Keyring to them as they are, and tests pass the in-memory
// implementations of this package.
//
// # Secrets
//
// Secrets (spec 5.1, 5.2, 4.4, 10.2, 10.7) go through [Secrets], which the vault backs with the
// OS keyring: the root private key of the self-operated operator, and one bundle per
// (Company identifier, account) holding the User ID, Agent ID, delegated keys and tokens. None of
// them is ever written to SQLite, a log, or a model-visible result. The vault provides a [KV] of
// opaque byte values keyed by item name; [NewSecrets] turns any KV into the typed, versioned-JSON
// [Secrets] the engine uses, with per-item atomic updates. [NewMemoryKV] is an in-memory KV.
//
// # State
//
// Everything else is non-secret state, which the vault keeps in SQLite: [EngineState] (discovered
// Companies, cached documents, Sessions, the inspector's exchanges and [Settings]) for
// agentcore/engine, [Approvals] (approvals, their revisions and the decision log) for
// agentcore/approvals, [Conversations] with [Transcripts] (conversations, their cursors and
// transcripts) for agentcore/conversation, and [FeedbackReports] (the reports of tasks Poppydesk
// could not do that it sent to Companies, spec 9.3) for agentcore/coverage. Every method that changes state returns only after the
// change is durable, which is what write-before-send (docs/DESIGN.md invariant 3) and persisting a
// message before sending it (spec 8.3) rely on. No record holds a token, key, Session JWT, code,
// User ID or Agent ID (docs/DESIGN.md invariant 5).
//
// [NewMemoryEngineState], [NewMemoryApprovals], [NewMemoryConversations] and
// [NewMemoryFeedbackReports] keep the same state in
// memory, with the same contract, for tests of the packages that use it.
//
// # Errors
//
// Every implementation reports an absent record or item with an error matching [ErrNotFound], a
// record that must be new but exists with [ErrExists], and a failed compare-and-set with
// [ErrConflict]. The first two are the io/fs errors, so they can be matched with errors.Is
// against either name.
package store

import (
	"errors"
	"io/fs"
)

// Errors the storage interfaces return (wrapped, with what was not found or changed).
var (
	// ErrNotFound: the record or secret item does not exist. It is [fs.ErrNotExist].
	ErrNotFound = fs.ErrNotExist
	// ErrExists: a record that must be new already exists, such as a used sid (sids are never
	// reused, spec 5.2) or an approval ID. It is [fs.ErrExist].
	ErrExists = fs.ErrExist
	// ErrConflict: a compare-and-set found another state than the caller expected, or a
	// revision that is not the latest, so nothing was changed.
	ErrConflict = errors.New("the stored record changed since it was read")
)
