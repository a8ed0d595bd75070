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
//     Scopes, Extension, ResourceMetadata, RetryAfter, Challenges). The hooks: invalid_token calls
//     Hooks.Refresh once (nil or failing: the request is re-sent once signed out);
//     insufficient_scope and a 401 challenge are returned with the needed scopes
//     (ProtocolError.NeedsScopes); invalid_session stops; session_ended calls Hooks.RenewSession
//     (new sid) and re-sends once; version_unsupported calls Hooks.Rediscover (poppy.json without
//     cache) and re-sends once in a new Session only if the chosen version changed;
//     extension_required names the extension, from the JSON body or the WWW-Authenticate
//     extension attribute.
//   - 10.4: the Session JWT's audience is the signer's business; this package only guarantees it
//     goes to that Company's Session destinations.
//
// Bounded waits: DiscoveryClient and NoRedirectClient (discovery documents, metadata,
// descriptions, JWKS, OAuth endpoints) end each request, redirects and body included, within
// Config.DocumentTimeout (10 s by default); a Company that doesn't answer gets a *TimeoutError
// naming the URL (errors.Is ErrTimeout and context.DeadlineExceeded), not a stuck request.
// SessionClient requests are bounded by Config.Timeout and the caller's context.
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
// Signed-in requests (spec 4.5, RFC 9449): Hooks.Authorize puts the credential on each attempt
// (Bearer, or DPoP with a proof); without it the token is sent as Bearer. Hooks.OnResponse sees
// every response (a DPoP-Nonce to keep). A use_dpop_nonce challenge with a DPoP-Nonce is answered
// by sending the request once more. A request that continues signed out drops Authorization and
// DPoP and says why in Response.SignedOutReason. net/http never replays a request by itself: each
// retry is decided here and freshly signed, since a Session JWT is single-use.
package transport
