// Package operator is the service an operator deploys to publish one Personal Agent identity for
// all its Users and sign for them blindly (spec 4.1, 5.2 "Delegated keys", 10.7; RFC 9474).
//
// # What it publishes (spec 4.1)
//
// Below its public base URL: the client metadata document at /agent.json (client_id equal to
// that URL, client_name, logo_uri, jwks_uri on the same host, redirect_uris with the loopback
// redirect URI of RFC 8252 §7.3 that Direct Sign-In uses, token_endpoint_auth_method
// private_key_jwt), the JWKS at /jwks.json (RSA public keys, alg PS384) and the logo at
// /logo.png. The documents are built by agentcore/identity, as a self-operated Poppydesk builds
// its own.
//
// # Blind signatures (spec 10.7, RFC 9474)
//
// A device enrolls with a P-256 key of its own (POST /v1/devices), with an enrollment token from
// the administrator or, when configured, openly. Every later request carries a device proof
// (identity.SignDeviceProof): an ES256 JWT over the method, the URL, the SHA-256 of the body, a
// fresh jti and iat, verified with the device's public key, the only thing the operator keeps
// about it. POST /v1/sign takes a key id and a blinded message and answers the blind signature
// (RSABSSA-SHA384-PSS-Deterministic: devices blind and finalize with github.com/cloudflare/circl
// blindsign/blindrsa; the operator signs with the CRT and checks each result before it leaves,
// hand-written over math/big for the reasons crtSigner gives, about three times circl's speed).
// Every malformed request — a blinded value outside RFC 9474's range or 0, 1, n−1, a wrong key,
// a bad proof — is refused before its quota counts it. The device
// wrote the client assertion or delegation, its jti included, and unblinds the answer into an
// ordinary PS384 signature; the operator sees the device and the blinded message, nothing else,
// and logs neither. Because a key that signs blindly signs whatever a device sends, the operator
// signs both client assertions and delegations only this way, and limits each device's
// signatures per hour and per day (HTTP 429 with Retry-After and the time in words).
//
// # Keys and rotation
//
// RSA keys (3072 bits by default, at least 2048) are read at start from PEM files or the
// environment. Each may carry a Sign-From header: every key is published at once, and the one
// whose Sign-From is latest but not in the future signs, so a new key is published before it
// signs. The previous key still signs for [Grace] after the switch; it stays published until
// [KeySet.RemoveAfter], when every delegation (at most 24 h) and assertion it signed has
// expired and Companies' caches have caught up.
//
// # State
//
// [Store] keeps devices, enrollment-token hashes, the replay cache and quota counters, in
// PostgreSQL (github.com/jackc/pgx/v5 through database/sql) so several instances behind a load
// balancer serve the same devices and share their quotas, or in SQLite (modernc.org/sqlite) for
// one instance. Quotas are counted in fixed UTC hour and day windows with one atomic upsert per
// window in the transaction that also records the proof's jti, so two instances never let a
// device past its quota. No row pairs a device with a time finer than those windows: the
// replay cache names no device and keeps the hour, devices keep the day they enrolled.
//
// # Open enrollment
//
// Open enrollment is limited per source address and network and costs a proof of work
// (enroll_limits.go, identity.SolveEnrollPoW), so a flood from one place leaves it open for
// everyone else; behind a reverse proxy, Config.TrustedProxies says whose X-Forwarded-For counts. Migrations run at start, in one transaction each, under a PostgreSQL
// advisory lock when instances start together.
//
// # Operations
//
// /healthz answers while the process runs; /readyz answers 200 only while the database answers
// and a key signs, and 503 once draining for shutdown; /metrics counts signatures, refusals and
// enrollments, on a listener of its own (MetricsHandler) or behind Config.MetricsToken. Logs are
// JSON lines of method, route, status and duration, and name no device.
package operator
