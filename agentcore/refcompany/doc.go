// Package refcompany is the reference Company: a spec-faithful Poppy 0.4 Company in the spirit of
// net/http/httptest, used by the engine's tests and by the demo (`poppydesk company serve`).
//
// One TLS listener on 127.0.0.1 (random port by default) serves every host of the Company,
// routing by Host, with a certificate for shop.localhost, *.shop.localhost and agent.localhost
// issued by a CA generated at start (the devmode rule: clients trust it only in dev mode and map
// only these names to 127.0.0.1; see transport.Config.DevHosts / DevRootCAs and ClientConfig):
//
//   - https://shop.localhost:PORT: poppy.json with every field of spec 3.1 (organization, auth
//     with issuer, scopes and scope_hints, agent, apis, web, feedback, excluded_tasks, extensions
//     with operations "2", supported_versions with a 0.3 document, skill_index); the protected
//     resource metadata (spec 3.2, RFC 9728); an OpenAPI description; the Session destinations /api/* and
//     /poppy/*: GET /api/products (signed out), GET /api/orders (needs orders:read: 401
//     challenge, invalid_token, insufficient_scope), POST /api/gift-wrap (extension_required in
//     WWW-Authenticate), POST /poppy/conversations (extension_required in a JSON body). Every
//     Session destination verifies the Session header with agentcore/sessioncheck (spec 5.3),
//     whose HTTP client reaches agent.localhost on this listener in dev mode.
//   - https://auth.shop.localhost:PORT: the issuer (oauth.go, oauth_pages.go): RFC 8414 metadata
//     listing https://shop.localhost:PORT in protected_resources (and
//     dpop_signing_alg_values_supported after SetDPoP); /oauth/authorize with a sign-in and
//     consent page (scope checkboxes pre-ticked, Approve/Deny; exact redirect_uri matching
//     against the client metadata fetched from client_id without redirects, any port for a
//     loopback URI, RFC 8252 §7.3; PKCE S256 required; iss on every response, RFC 9207);
//     /oauth/token (authorization_code, refresh_token with rotation, device_code; private_key_jwt
//     only: aud = issuer exactly, short exp, jti replay refused; resource with invalid_target,
//     RFC 8707; DPoP binding and nonces, RFC 9449); /oauth/device and the /device verification
//     page (opening it approves nothing); /oauth/revoke (RFC 7009, revokes the grant's tokens).
//     Issued access tokens go into the same table as AddAccessToken, so the protected endpoints
//     accept them. The authorization-server faults (iss-missing, iss-wrong, scope-wider,
//     device-foreign-host, refresh-rotation, refresh-no-rotation, dpop-nonce, device-slow-down)
//     are listed with every other fault in server.go.
//   - Protected endpoints check access tokens on the resource side: scheme (Bearer or DPoP with
//     VerifyDPoPAccess), unknown, expired (ExpireAccessTokens) or revoked tokens, and the token's
//     resource (MCPURL at the MCP server, the origin elsewhere, or the API's own resource with
//     SetAPIResource), answering RFC 6750 challenges with resource_metadata. ApproveSignIn plays
//     the User's browser through Direct Sign-In for tests.
//   - The jacket-exchange Orders API (orders.go, OpenAPI 3.1) and an MCP server (mcpserver.go,
//     official SDK, Streamable HTTP) return Operations v2 operations and perform each approved
//     operation at most once (ledger.go, Ledger).
//   - Task coverage (coverage.go, spec 9): excluded tasks with alternatives that hold web,
//     openapi and mcp references, one to an operation the description lacks and one of a later
//     type; the feedback endpoint (Session verified, invalid_request, 202; FeedbackReports lists
//     what it received); a skill_index with the 0.2.0 $schema and a SKILL.md (relative url), a
//     .tar.gz (origin-relative) and a .zip (absolute url) skill, an entry of an unknown type, and
//     a script that would create SkillScriptMarker if anything ran it. Faults: a digest mismatch,
//     an archive that escapes its folder, a reference to an unlisted API, a feedback answer of 200
//     with an alternative, and a feedback endpoint that answers 429.
//   - https://www.shop.localhost:PORT: redirects poppy.json to shop.localhost (spec 3 redirects).
//   - agent.localhost (or any host): AddHost mounts a handler, e.g. NewTestAgent serves a real
//     identity.Agent's client metadata and JWKS there.
//
// Discovery documents carry Cache-Control (SetCacheControl) and an ETag and answer 304 to a
// matching If-None-Match (RFC 9111). Every request received is recorded (Requests, RequestsTo) so
// tests can assert what was and wasn't sent. Faults (Faults, SetFault, Options.Faults) make the
// Company break one rule at a time, at start or at run time; EditPoppyJSON, EditASMetadata,
// EditResourceMetadata and SetIssuerMode cover the other discovery checks.
//
// The product links this package for its demo and `poppydesk company serve`; tests reach it
// through agentcore/poppytest, whose Start builds, serves and (at the test's cleanup) stops a
// Company in one call. Clock is the one test clock the Company and the Personal Agent under test
// share. Tests of what the Host composes use app/apptest, which starts the Company and a Host
// over it.
package refcompany
