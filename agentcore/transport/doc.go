// Package transport is the engine's safe HTTP client for URLs a Company gives, and the error
// taxonomy of Poppy 0.4 spec sections 7 and 8.13.
//
// Spec sections implemented:
//
//   - 3 "HTTPS": every request goes through a RoundTripper that refuses non-HTTPS URLs
//     (*SchemeError). CheckURL validates Company-given URLs.
//   - 3 "Redirects and addresses": the dialer resolves names itself and refuses loopback,
//     private (RFC 1918, ULA), link-local, unspecified, multicast, CGNAT and broadcast addresses
//     (*AddressError), and net.Dialer.ControlContext checks the address actually connected to, so
//     DNS rebinding cannot get around the policy. "Configured on purpose" is either
//     Config.AllowNonPublicAddresses or dev mode: Config.DevHosts names (exact, or "*.suffix")
//     map to 127.0.0.1 and only they may reach loopback; Config.DevRootCAs are trusted for those
//     names only, never for other hosts, and never added to the system store. No environment
//     proxy is used (it would bypass the address check).
//   - 3 redirects: DiscoveryClient follows up to 10 redirects, each only to HTTPS, stripping any
//     credential header. SessionClient NEVER follows a redirect: the simplest choice that can
//     never send a token, Session JWT, assertion or credentials to a new URL. A 3xx becomes a
//     *RedirectError naming the Location (errors.Is ErrRedirectRefused). The OAuth layer uses
//     NoRedirectClient for token, revocation and device endpoints for the same reason.
//   - 5.2 Session destinations: a SessionClient signs only requests to its Destinations (see
//     discovery.Company.SessionDestinations): exact URLs (an MCP server's url,
//     {browser_session_endpoint}/authorize), URL templates (an OpenAPI server joined with its
//     path templates, each expression one segment part; the conversation routes of 8.2) and
//     extension endpoint prefixes, never a whole origin. Exclusions (description documents,
//     OAuth endpoints, pages) and every /.well-known/ path are refused whatever the entries say.
//     Any other URL (discovery documents, OAuth endpoints, web pages, other hosts) gets a
//     *DestinationError before anything is sent.
//     The Signer (agentcore/session's *Session) sets Poppy-Session, Poppy-Version and
//     Poppy-Extensions; SessionClient also sets Poppy-Version/Poppy-Extensions first for signers
//     that don't, and the signer's values win.
//   - 5.6: no tokens in URLs (an access_token query parameter is refused); HTTP 429 waits at
//     least Retry-After (delay-seconds or HTTP-date; 1 s when absent) with Config.Sleep, at most
//     Config.Max429Retries times and never longer than Config.MaxRetryAfter.
//   - 7, 8.13, 3.3, 3.4, 5.5: error responses become *ProtocolError (Status, Code, Description,
//     Scopes, Extension, ResourceMetadata, RetryAfter, Challenges); Refused tells a refusal at the
//     Company's door (Session, version, extension, token, rate) from the API's own errors.
//   - 10.4: the Session JWT's audience is the signer's business; this package only guarantees it
//     goes to that Company's Session destinations.
//
// The signed-request pipeline: SessionClient is the one place a request with the Session header
// is built and sent, whoever sends it (agentcore/apis for OpenAPI calls, and for MCP through
// SessionClient.RoundTripper; conversations, feedback, the browser's authorize request through
// agentcore/engine's Client.Do). SessionClient.Send composes its steps in the order they run,
// each one job in its own function: destination (session.go), token (the Hooks.Token of the
// sign-in layer), build (attempt.go: Poppy-Version and Poppy-Extensions, Bearer or a DPoP proof
// through Hooks.Authorize, then the Session JWT), exchange (attempt.go: one bounded exchange
// through the guard, no redirect, no replay), answer (answers.go: the one policy per condition,
// the table of docs/DESIGN.md "The signed request"). A request it does not send for a reason of
// its own is a *NotSentError; a request that went signed out after the Company refused the
// account's sign-in says so (Response.SignedOutReason, *SignedOutError). net/http never resends
// a signed request with a body: the requests have no GetBody, and every attempt is built and
// signed again by the pipeline.
//
// Bounded waits: DiscoveryClient and NoRedirectClient (discovery documents, metadata,
// descriptions, JWKS, OAuth endpoints) end each request, redirects and body included, within
// Config.DocumentTimeout (10 s by default); a Company that doesn't answer gets a *TimeoutError
// naming the URL (errors.Is ErrTimeout and context.DeadlineExceeded), not a stuck request.
// SessionClient requests are bounded by Config.Timeout and the caller's context: the whole
// exchange, or, for a streamed answer (Request.Stream, the MCP RoundTripper), the wait for the
// response headers, the body then bounded by the caller.
//
// Every exchange is reported to Config.Observer (for the inspector) when its response body is
// closed, with the URL, headers and the bodies' first 64 KiB redacted by agentcore/redact:
// Poppy-Session, Authorization, DPoP, Cookie and Set-Cookie values, token-ish JSON fields, and
// anything shaped like a JWT (DESIGN invariant 5).
//
// WWW-Authenticate is parsed by a small hand-written parser (ParseChallenges) because neither the
// standard library nor the module's dependencies offer an RFC 9110 §11.6.1 challenge parser
// (net/http only parses Basic credentials, and RFC 9651 structured fields are a different
// grammar). It follows the ABNF exactly, including the comma ambiguity between challenges and
// parameters, quoted-pair unescaping and token68, and is fuzzed (FuzzParseChallenges).
//
// One Transport (one connection pool, keep-alive) serves every Company; its clients are built
// once, so a request allocates no client. A signed request costs little more than a plain one
// plus its ES256 signature (BenchmarkSignedOutRequest's x-floor): SessionClient builds the
// http.Request from the URL it checked (one parse), sends it through the guard without an
// http.Client (no redirect machinery, header copies or timeout goroutine: the request's context
// bounds the exchange), and checks destinations without allocating.
//
// Signed-in requests (spec 4.5, RFC 9449): Hooks.Token gives each request's token when it carries
// none, Hooks.Authorize puts the credential on each attempt (Bearer, or DPoP with a proof);
// without it the token is sent as Bearer. Hooks.OnResponse sees every response (a DPoP-Nonce to
// keep).
package transport
