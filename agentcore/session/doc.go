// Package session is the Personal Agent's side of Poppy Sessions: User IDs and Agent IDs
// (spec 5.1), delegated keys (spec 5.2 "Delegated keys", 10.7), the Session JWT and the
// Poppy-Session / Poppy-Version / Poppy-Extensions headers (spec 3.4, 5.2), and new Sessions
// after session_ended or a version change (spec 3.4, 5.5).
//
// # Identity and keys (docs/DESIGN.md invariant 7)
//
//   - A User ID is 144 random bits, base64url, created the first time the User meets a Company
//     identifier and stored in that Company's account "" bundle in store.Secrets, so it is stable
//     per (User, Company identifier) and the same whichever account is signed in (spec 5.1). It is
//     never derived from personal data. An optional Agent ID follows the same rules.
//   - An anonymous browsing Session (Options.Anonymous) has a throwaway User ID held only in
//     memory, discarded by Manager.Close, and refuses to sign a request with an access token
//     (spec 5.1, 5.4).
//   - Each User ID (including each anonymous one) has its own delegated P-256 key; no key ever
//     signs for two User IDs (spec 5.2). A key's delegation lives Config.DelegationLifetime
//     (12 h by default); a new key is made when less than Config.RotateBefore (1 h) is left, and
//     nothing is signed within 30 s of a delegation's exp.
//   - sids are 128 random bits and a Manager never hands out one twice (spec 5.2).
//
// # Hot path
//
// After a Session's first request, SignRequest reads no keyring: the delegated key, its
// thumbprint and the base64url-encoded JWT header (which carries the delegation) are held in
// memory, and each request costs a JSON encoding of the claims, base64url, and one ECDSA P-256
// signature. The compact JWS is assembled from jwx's jwsbb building block jwsbb.Sign and
// encoding/base64 instead of jws.Sign, because the header never changes for a key and re-building
// and re-serializing it through jws.Sign on every request costs more than the signature itself.
// BenchmarkSign compares the whole SignRequest with a bare ECDSA P-256 signature over an input of
// the same size, in the same run.
package session
