// Package engine wires Poppydesk's protocol packages into the one engine the app, the MCP
// server and the CLI call: the safe transport (agentcore/transport), discovery with a
// persistent cache (agentcore/discovery), the Personal Agent's identity (agentcore/identity),
// Sessions (agentcore/session), and the inspector's exchange log.
//
// Spec sections implemented here (the details are in the packages named):
//
//   - 3, 3.2: [Engine.Discover] verifies a Company and stores it; discovery documents are cached
//     through the state store (RFC 9111), and the issuer found for each domain is remembered
//     (Settings key "discovery.known_issuer:<domain>"), so a later run never falls back to "no
//     issuer" for a Company whose issuer it knows. [Engine.Company] reads a stored Company
//     without fetching anything.
//   - 3.3, 3.4: each Session declares Poppy-Version (the chosen version) and, only when the
//     Company lists the Operations extension in version "2", Poppy-Extensions: "operations";v="2".
//     version_unsupported fetches poppy.json again without any cache; a changed version starts a
//     new Session and the request is sent again once ([Client] hooks).
//   - 5.1, 5.2, 5.4: [Engine.Client] returns the Client of one (Company identifier, account):
//     its own Session, signed by the User's delegated key for that Company, sent only to the
//     Company's Session destinations. A signed-in Client takes the account's access token from
//     the keyring itself, so no caller handles a token.
//   - 5.2, 7: OpenAPI descriptions. Discovery reads each one through the state store's RFC 9111
//     cache to know the request URLs it describes (the Company's Session destinations); the
//     engine's one apis.Descriptions reads them through the same cache, so the copy discovery
//     fetched is used without a second download while fresh, parsed once and shared by every
//     Client, the approval queue, the model's tools and the window. The descriptions read later
//     in a run are recorded per Company (describedOf, one apis.Described shared by the Clients
//     of all its accounts).
//   - 5.5: session_ended starts a new Session with a new sid and sends the request again once.
//     Every Session is recorded in the state store (sid, account, version, extensions, start
//     and end); sids are never reused. Close records the end of the Sessions it started.
//
// # What is stored where (docs/DESIGN.md invariants 5 and 7)
//
// Secrets (root and delegated private keys, User IDs, Agent IDs, tokens) go only through
// store.Secrets (the OS keyring). Config.State receives Companies, cached public documents,
// Session records (the sid is not secret; the User ID is, and is never written there), and
// exchanges already redacted by agentcore/transport. The engine wraps the handler of the logger
// it is given so that every attribute passes through redact.ReplaceAttr, even when the caller's
// handler has no ReplaceAttr. The repository's canary test (canary_test.go) runs the engine
// against the real keyring and SQLite file and finds no secret in the database, its WAL, the
// log file or the exchange log.
//
// # State
//
// Config.State is a store.EngineState, whose records (store.Company, store.CacheEntry,
// store.Session, store.Exchange) agentcore/store defines: *vault.State, the SQLite file, in the
// app and in the engine's own tests, passed as it is; store.NewMemoryEngineState in pure unit
// tests of other packages. The engine does not import the vault (docs/DESIGN.md: agentcore reaches it
// through the interfaces of agentcore/store).
//
// The exchange log is written by one goroutine in the order exchanges are observed, in batches of
// one transaction, and the Inspector's details are decoded there (inspect.Defer), so a request
// never waits for an SQLite commit or a JWT decode unless a full queue makes it wait for room;
// [Engine.FlushExchanges] waits for what was observed, Close stores everything queued, and a
// crash loses at most the last batch window (exchanges.go, docs/DESIGN.md "The exchange log").
//
// # Signed in (spec 4.4–4.7, 5.4, 5.5, 7)
//
// [New] builds the sign-in layer (agentcore/oauth, [Engine.OAuth]) over the engine's own
// transport, identity and keyring, so there is one way a signed-in request gets its token: a
// signed-in [Client.Do] takes each service's credential from oauth.Client.AccessToken. Before
// the first signed-in call to an API or conversation endpoint it reads that service's protected
// resource metadata and, when its resource is not https://{organization.domain}, uses a token
// requested for that resource only there (4.5); MCP servers always get a token for their url
// (spec 7). The credential is put on as Bearer, or as DPoP with a proof for DPoP-bound tokens.
// invalid_token refreshes once and retries; invalid_grant continues signed out and surfaces a
// [SignInRequiredError]; insufficient_scope comes through as the transport's typed error with the
// needed scopes. [Engine.SignOut] revokes every refresh token of the account; its Sessions
// continue signed out (5.5). Each account has its own Session (5.4). [Engine.APIClient] gives
// agentcore/apis the same credentials.
package engine
