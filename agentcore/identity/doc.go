// Package identity is the Personal Agent's identity as an OAuth client and as the issuer of
// delegations: the client metadata document and its JWKS (spec 4.1), client assertions
// (spec 4.1, RFC 7523, audience rules of spec 10.4), and delegations that vouch for the delegated
// keys that sign Session JWTs (spec 5.2 "Delegated keys", spec 10.7).
//
// # Operator
//
// The keys published at jwks_uri belong to the operator (docs/DESIGN.md, spec 10.7). Everything that
// signs with them goes through the [Operator] interface, which receives the complete JWS signing
// input (the header and claims were written here, on the User's device, including the
// unguessable jti that RFC 9474 §7.3 needs) and returns the raw signature. [LocalOperator] is the
// self-operated mode: an ES256 root key generated on first use and kept through store.Secrets
// (the OS keyring in production). [RemoteOperator] is the device side of an operator that
// signs blindly (RFC 9474 RSABSSA-SHA384-PSS-Deterministic, whose output is an ordinary PS384
// signature). It trusts the operator with nothing a Company would not see: it signs only with a
// key in the key set Companies are shown (the client metadata document's jwks_uri, at most
// [MaxOperatorKeys] keys), and verifies every unblinded signature with it. [Enroll] enrolls a
// device, with the proof of work an open operator asks for (pow.go).
//
// Because the operator signs a signing input rather than a parsed token (jws.Sign cannot hand
// the signing input to a remote signer), this package assembles the compact JWS itself from
// jwx's building blocks: jwsbb.SignBuffer for the signing input and jwsbb.Sign for the local
// ES256 signature. The final "." and signature are appended with encoding/base64, because
// jwsbb.AppendSignature (v3.4.0) loses the signing input when it has to grow its buffer.
//
// # Unlinkability (docs/DESIGN.md invariant 7)
//
// A delegation carries exactly iss, cnf.jwk (public members only), iat, exp and jti: nothing
// about the User or the Company (spec 5.2). Its lifetime is capped at 24 hours.
package identity
