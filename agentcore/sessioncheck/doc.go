// Package sessioncheck is the Company side of Poppy Sessions: it verifies the Poppy-Session
// header of a request as spec 5.3 requires, before anything relies on Session claims.
//
// [Verifier.Verify] performs, in this order:
//
//  1. Spec 5.3 step 1: fetch the Personal Agent's client metadata from the Session JWT's iss,
//     HTTPS only, never following a redirect (CIMD §5), check that its client_id equals iss, and
//     fetch the public keys from its jwks_uri (HTTPS, same host). Both are cached
//     (Config.MetadataTTL); an unknown kid triggers at most one refetch per 30 s.
//  2. Spec 5.2 "Delegated keys", in the order it gives: the delegation in poppy_dlg verifies with
//     the jwks_uri key its kid names (ES256 required, PS384 accepted for blind signing, 10.7);
//     its typ is poppy-delegation+jwt, its iss is the JWT's iss, it has not expired, and its exp
//     is at most 24 h after its iat; then the Session JWT verifies with cnf.jwk (ES256) and its
//     kid is that key's RFC 7638 thumbprint. A Session JWT without a delegation, including one
//     signed directly with a jwks_uri key, is rejected. Verified delegations are cached until
//     their exp.
//  3. Spec 5.3 step 2: typ poppy-session+jwt; aud equal to Config.Identifier character for
//     character, as a single string (10.4); htm and htu match the request as RFC 9449 §4.3 says
//     (query and fragment ignored, scheme and host case-insensitive, default port and
//     percent-encoding normalized); iat within Config.Window either side of now.
//  4. Spec 5.3 step 3: ath present exactly when an access token is sent, equal to its SHA-256,
//     and the token issued to the same client_id.
//  5. Spec 3.4: Poppy-Version present and compatible with Config.Versions (same major, and before
//     1.0 the same minor), else version_unsupported. Poppy-Extensions is parsed as an RFC 9651
//     List by agentcore/headers (the codec the Personal Agent writes with); an unparseable field
//     declares no extensions, and members that are not a String with a String "v" parameter are
//     ignored.
//  6. A reused jti is rejected (spec 5.3 "Replayed JWTs", optional there), from a replay cache
//     bounded by Config.MaxJTIs (internal/replay, which the reference Company's authorization
//     server uses too for client assertions and DPoP proofs).
//  7. Spec 5.3 step 4 and 5.5: the Session is looked up by (client_id, sid). An ended sid gets
//     session_ended; an unknown sid starts a Session; a known sid must carry the same sub and
//     agent_id. Strictness choice: a known sid must also carry the same Poppy-Version and the
//     same declared extensions (compared as a set of name/version pairs, so order and
//     whitespace do not matter) as its first request, since spec 3.4 says the Personal Agent
//     sends the same values for the whole Session and starts a new one to change them; a change
//     is answered with invalid_session.
//
// Every failure is an *[Error] with the spec's code (invalid_session, session_ended,
// version_unsupported), HTTP 400, and an error_description naming the spec section.
// [Error.WriteJSON] writes the response body.
//
// The JWS signatures are verified with github.com/lestrrat-go/jwx/v3 (jws.Verify); the JOSE
// header and claims are decoded with encoding/json into structs with pointer fields, so that a
// missing claim is told apart from an empty one.
package sessioncheck
