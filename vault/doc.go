// Package vault keeps what Poppydesk must remember: secrets in the OS keyring, everything else
// in one SQLite file. It implements the storage interfaces of agentcore/store with that
// package's records, and imports nothing else of Poppydesk (docs/DESIGN.md): [Keyring] is a
// store.KV, and [State] is the store.EngineState, store.Approvals, store.Transcripts and
// store.FeedbackReports that the engine, the approval queue, the conversation manager and task
// coverage use as it is. Other packages test with
// agentcore/store's in-memory implementations of the same interfaces.
//
// # What is kept where, and why
//
// The OS keyring ([Keyring], through github.com/zalando/go-keyring: the Secret Service on Linux,
// the Credential Manager on Windows, the login Keychain on macOS) holds every secret: the self-operated operator's root private key; and, per (Company identifier,
// account), the User ID and Agent ID, the delegated private keys with their delegations, the DPoP
// key, and the access and refresh tokens with their scopes, resources and expiries. Spec 10.2
// (Secrets and the model) and docs/DESIGN.md invariant 5 require keys and tokens to stay out of
// anything the model or a log can read; the keyring is the place the desktop encrypts and unlocks
// with the user's session. The User IDs and Agent IDs sit there too, not in SQLite, because spec
// 5.1 requires the mapping from each User to their IDs at every Company to stay confidential:
// a copied database file or backup must not reveal it.
//
// Layout: few keyring items. One item per (Company identifier, account) bundle, plus one for the
// root key, plus one index item (go-keyring cannot list a service's items, so [Keyring.Names]
// reads the index). Opening a Company is therefore one Secret Service round trip. Each value is
// the versioned JSON that agentcore/store writes, stored as given (bytes that are not UTF-8 text
// are base64-encoded behind a marker prefix). All items carry the Secret Service attributes
// service=<service name, default "Poppydesk"> and username=<item name>, so
// `secret-tool lookup service Poppydesk username root` shows one, and a label that says in words
// what the item holds ([ItemLabel]: "Poppydesk: the private key of your own identity"), which
// keyring managers such as Seahorse show. go-keyring's Set can only write "Password for 'root' on
// 'Poppydesk'", so on Linux items are written with go-keyring's own Secret Service client
// (github.com/zalando/go-keyring/secret_service) and the same attributes.
//
// The SQLite file ([State], modernc.org/sqlite) holds what is not secret: discovered Companies
// and their documents with HTTP cache validators (spec 3), Sessions by sid with version and
// extensions (spec 5; sids are never reused), conversations and their cursors (spec 8) with their transcripts in
// handling order, saved in the same transaction as the cursor that covers them (spec 8.5), pending
// and finished approvals with every operation revision and an append-only decision log
// (Operations extension v2, sections 5 to 7), the inspector's exchange log (already redacted by
// the caller), the feedback reports sent to Companies as sent (spec 9.3), and settings. It never holds a token, key, Session JWT, code, User ID or Agent ID.
//
// # Keyring behaviour
//
// Every keyring call is bounded by a timeout (default 3 s) and by its context, so a locked or
// absent keyring cannot hang the app; a call that times out keeps running in the background but
// its result is discarded, and later calls for the same item wait behind it so writes are never
// reordered. Values are cached in memory after the first read (also "absent"), so once warm the
// hot path of signing a request reads no keyring at all. Each write of a value that fits one item
// is one keyring call that replaces it (a Secret Service CreateItem with replace, a CredWrite, a
// `security add-generic-password -U`), so it is atomic per item. There is no other backend:
// without a usable keyring every call fails with an error matching [ErrKeyringUnavailable] that
// names the platform's keyring and says how to make it usable ([KeyringHelp]). There is
// deliberately no plain-text file fallback.
//
// # Each platform's keyring, and its limits
//
// The limits are go-keyring v0.2.8's, in its own words and checks (keyring.go's ErrSetDataTooBig,
// keyring_windows.go, keyring_darwin.go, and its test TestSetTooLong, which expects a 10,002-byte
// value to fail on Windows and macOS):
//
//   - Linux and the BSDs, the Secret Service over D-Bus: "no theoretical limit but performance
//     suffers with big values (>100KiB)". A value is one item; [MaxItemSize] (64 KiB, at most
//     about 87 KiB once base64-encoded) stays below that.
//   - Windows, the Credential Manager (CredWrite through github.com/danieljoos/wincred): "the
//     password is limited to 2560 bytes" (CRED_MAX_CREDENTIAL_BLOB_SIZE), the service name to
//     fewer than 512 bytes. The target name is "SERVICE:NAME". Nothing prompts; any program
//     running as the same user can read the items, as with an unlocked Secret Service.
//   - macOS, the login Keychain through /usr/bin/security: go-keyring writes one line
//     `add-generic-password -U -s SERVICE -a NAME -w go-keyring-base64:…` to `security -i`'s
//     standard input (so the secret is never on a command line) and refuses a line over 4,096
//     bytes, about 3,000 bytes of value ("the combination of service, username & password should
//     not exceed ~3000 bytes"). It checks that length only after starting `security`, so the
//     vault never hands it a longer line. The items' access list names /usr/bin/security, the
//     program that created them, so macOS shows its prompts for `security` rather than
//     Poppydesk: when the login Keychain is locked, macOS asks for its password and the call
//     waits; a call not answered within the timeout fails with ErrKeyringUnavailable, and the
//     next call asks again. Any program of the user that runs `security` reads the items without
//     a prompt. None of this is measured here (no Mac): it is read from go-keyring's source.
//
// A value longer than its platform's item limit (a Company bundle with several tokens and
// delegations is a few KiB, and the index grows with the Companies) is kept in parts: the item
// holds a manifest and the parts are items of their own, written before the manifest and deleted
// after it is replaced, so a reader sees the old value or the new one (keyring_parts.go). A value
// above MaxItemSize is an error matching [ErrValueTooBig] and changes nothing.
//
// # State behaviour
//
// Schema migrations are embedded (migrations/NNNN_name.sql), applied at open in order inside
// transactions, forward only; a database from a newer build is refused. The database runs in WAL
// mode with synchronous=FULL, a busy timeout, foreign keys and secure_delete, one writer
// connection and a small reader pool. Every method that changes data is one transaction committed
// before it returns, so [State.TransitionApproval] is the write-before-send step of Operations
// extension v2 section 7 (an approval is durable before it is sent). The exchange log keeps a
// window (default 30 days or 200 MB of stored fields, whichever is smaller), pruned by an injected
// clock on open (or by the Host beside its start, StateOptions.PruneLater, in paced steps) and by
// one step every 64 inserts, in steps of at most StateOptions.PruneBatch rows, each its own
// transaction, so recording never waits for more than one step; the log's size is
// one row kept by triggers (migration 9), so when nothing is out of the window pruning reads an
// index entry and that row and writes nothing, however large the rest of the database. Long lists are read a page at a time on
// indexes (migration 0005): [State.ListApprovalsPage] is keyset paging newest first over
// (created_at, id), with a page's revisions in one query, and the approvals of one operation
// (ApprovalQuery.OperationID, what the approval queue reads to propose or approve it, Operations
// 3) come by an index on their revisions' operation_id (migration 10), not from every finished
// approval; a Company's conversations come from (company, updated_at).
//
// The keyring code is hand-written over go-keyring because no maintained library adds timeouts,
// caching and an index to it; SQL is written directly against database/sql, as the schema is small.
package vault
