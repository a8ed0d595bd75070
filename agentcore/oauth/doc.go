// Package oauth is the Personal Agent's OAuth client: Direct and Device Sign-In, refresh,
// per-service tokens, revocation and DPoP, for Poppy 0.4 spec section 4 (4.1–4.8), 5.4, 5.5,
// 7 and the audience rules of 10.4/10.5.
//
// Spec sections and RFCs implemented:
//
//   - 4.2 Direct Sign-In (RFC 6749 §4.1, RFC 7636, RFC 8252 §7.3, RFC 9207): [Client.StartDirect]
//     listens on 127.0.0.1 on a random port for exactly one callback (then closes the listener),
//     with a timeout and Cancel; redirect_uri is the loopback URI of the client metadata with that
//     port; PKCE S256, a fresh state and scope on every request. Only a request carrying the
//     sign-in's state is the callback: any other request to the listener (a port-scanning web
//     page, another process) gets a plain 400 page and neither takes the one callback nor ends
//     the sign-in (RFC 6749 §10.12). The callback then checks iss character for character
//     against the issuer the sign-in started with (also on error=access_denied; a wrong iss
//     with the right state ends the sign-in as a failure), exchanges the code at
//     token_endpoint with a client assertion whose aud is the issuer (4.1, 10.4) through the
//     no-redirect client (spec 3), and checks the granted scopes (4.7). The page the browser lands on says in plain words what happened and
//     carries no code or token.
//   - 4.3 Device Sign-In (RFC 8628, RFC 10027 §2): [Client.StartDevice] checks that the
//     verification link's host is the issuer's host or the host of a URL in protected_resources,
//     or a subdomain of either, with the same port, BEFORE anything is shown; the device_code is
//     an unexported field that no exported value carries. Polling honours interval, slow_down
//     (+5 s), authorization_pending, access_denied and expired_token with an injected clock and
//     sleeper.
//   - 4.4 refresh with the client assertion; rotation is stored with one UpdateCompany so a reader
//     sees the old or the new refresh token, never neither; invalid_grant signs the account out
//     (tokens removed, [ErrSignedOut]). Refreshes of one account are serialized so a rotated
//     refresh token is never used twice. [Client.RefreshHook] fits transport.Hooks.Refresh.
//   - 4.5 per-service tokens (RFC 8707, RFC 9728): [Client.AccessToken] reads a service's
//     protected resource metadata once before its first signed-in call; when its resource is not
//     https://{organization.domain}, a token is requested with resource set to it and kept for
//     that resource only. DPoP (RFC 9449): when the issuer lists
//     dpop_signing_alg_values_supported, token requests carry an ES256 proof whose key is kept in
//     the account's CompanyBundle.DPoPKey; a DPoP-Nonce / use_dpop_nonce answer is retried once
//     with the nonce; [Client.Authorize] sets "DPoP" plus a proof with ath for DPoP-bound tokens
//     and "Bearer" for tokens the Company did not bind.
//   - 4.6, 5.5 sign-out: [Client.SignOut] revokes every refresh token held for the account
//     (token_type_hint=refresh_token, client assertion), then deletes the tokens. A new sign-in
//     that replaces a refresh token revokes the replaced one (4.7), which is not sign-out.
//   - 4.7 scopes: [Plan] requests every scope still needed (the union with what is held), never
//     only the missing ones; [Describe] gives the window descriptions and hints (an unknown
//     changes value, or no hints at all, is shown as irreversible); [Choices] is the sign-in
//     screen's policy: every scope the Company describes or the model requested is listed, the
//     requested and held ones start ticked, and with neither only the scopes hinted to change
//     nothing (RFC 9700 §2.3: request only what is needed). A token response must grant
//     at least one scope and none beyond those requested; scope may be absent only when exactly
//     the requested scopes were granted, so absence is read as exactly the requested set. A
//     sign-in that grants no scope ends as a decline: the same [ErrDeclined], window words and
//     loopback page as when the User declines, nothing stored, and the refresh token it
//     carried revoked.
//   - 5.4 separate accounts at one Company use separate bundles (the account label).
//   - 10.2 nothing this package returns to the window or model holds a token, code, verifier,
//     device code or assertion: flows keep them in unexported fields, errors carry only OAuth
//     error codes and the Company's description (data, 10.1), and logs go through slog with
//     no secret values.
//
// PKCE is written here (pkce.go) rather than taken from golang.org/x/oauth2: that module is not
// in go.mod, several engineers edit go.mod concurrently, and RFC 7636's S256 is three lines
// (32 bytes from crypto/rand, base64url; SHA-256, base64url), tested against RFC 7636 Appendix B.
// DPoP proofs are built and signed with lestrrat-go/jwx/v3.
package oauth
