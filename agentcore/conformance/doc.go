// Package conformance is `poppydesk check`: an active run against one Company the user named,
// like a linter for the Company side. It reports each probe as pass, fail, note or skip, with
// its rule (agentcore/inspect's catalog: MUST, SHOULD or NOTE), the section and the evidence.
// Only a failed MUST probe fails a run. A NOTE rule that the Company did not keep is a note:
// behaviour the specification allows and a Personal Agent copes with (faults.go says, fault by
// fault, which is which and why).
//
// Probes without the User, in order:
//
//   - discovery, every check (agentcore/discovery CollectAll): spec 3, 3.1, 3.2, 3.4; and
//     whether every document answered within Config.Timeout (spec 3, bounded waits); the
//     documents of the other versions poppy.json serves name the same domain and issuer (3.4);
//   - the Session header (spec 5.2, 5.3): a wrong aud, a stale iat, no delegation, a
//     delegation signed by a key not in jwks_uri, a wrong typ, ath without a token, a
//     mismatched htu and htm must each get HTTP 400 invalid_session, and so must an htu that is
//     the http:// form of the request URL (spec 3: a URL of another scheme); versions (spec 3.4): no
//     Poppy-Version and an incompatible one get version_unsupported, the served one works; the
//     correct request (spec 3, 5.5, 5.6): no redirect with credentials, a new Session not ended,
//     accepted with no cookie (one it sets and then requires fails);
//     a Session continued with a new delegated key works (5.2), a known sid with another User
//     ID gets invalid_session (5.3), and an unknown extension and claim are ignored (3.3);
//   - Session destinations (spec 5.2): an OpenAPI description listing the origin's root,
//     /.well-known/ documents, OAuth endpoints or pages poppy.json names fails; one served at
//     the origin's root is noted;
//   - each MCP server's protected resource metadata (spec 7): its resource is the server's url
//     and its authorization_servers list the Company's issuer;
//   - task coverage (spec 9.4, 9.2): each skill artifact against its digest, each archive
//     through the proposal's extraction checks (agentcore/coverage's Extract), each openapi and
//     mcp reference of the excluded tasks' alternatives against poppy.json's apis, and each
//     alternative for instructions or references;
//   - the browser-session page (spec 6): its headers (no-store, frame-ancestors, COOP), its join
//     cookie (__Host-, Secure, SameSite), step 2 for a code fresh from the page, step 3 from
//     the same client with the page's cookies, and the same code a second time; no cookie but
//     the join cookie before step 3;
//   - the authorization server (spec 4): the correct client assertion with a code never issued
//     (the client metadata is fetched, the token endpoint answers in time), assertions whose
//     aud is an array, has a trailing slash or is the token endpoint (invalid_client each),
//     an authorization request without PKCE (refused; its error redirect carries iss), one
//     with an unregistered redirect_uri (an error page), Device Sign-In's link host, its complete link opened
//     (which must approve nothing) and a poll after the interval (run meanwhile), DPoP nonces at the token endpoint (noted);
//   - rate limits (spec 5.6): every 429 of the run is waited out (Retry-After) and noted.
//
// Probes that act run only when Config.AllowActions names their action:
//
//   - ActionSignIn: one Direct Sign-In in the User's browser (Config.SignIn; `poppydesk check`
//     opens it and prints the URL) to the run's own loopback redirect URI: iss on the redirect
//     back (RFC 9207), no scope beyond those asked, at least one granted (spec 4.7), DPoP
//     nonces at a resource (noted), authorize of the browser-session endpoint with the access
//     token (spec 6 step 2), a refresh that is accepted and rotates (spec 4.4); the refresh
//     token is revoked at the end (spec 4.6). At Config.SignedInURL (signedin.go): the correct
//     signed-in request accepted with no cookie, the access token in the URL's query refused
//     (spec 5.6), and a token asked for an MCP server's url refused there (spec 7);
//   - ActionOperation (signed in, Config.Operation): the request without the extension gets no
//     operation (Operations 2); with it, the summary's formatting (3) and the terms against
//     the request (5); the changed request gets other terms under a new revision (3); one
//     approval, retried after a 503 or a lost response (both noted, 7), is performed, never
//     answered with a new revision (6), carries a member no version defines, which must be
//     ignored (6), and sent again gets the first response (7);
//   - ActionConversation (spec 8): a first message sent twice gets the original response
//     (8.3); a stream is a stream (SHOULD), its cut before the reply, the pace of its pieces,
//     a read from a cursor just given and a stream resumed with Last-Event-ID are noted when
//     they do what 8.5 and 8.6 allow; every event's type and values are of this version; a
//     Direct Conversation naming a made-up user_requested_event_id gets invalid_request
//     (8.10); another User's read and Direct Conversation start get conversation_not_found
//     (8.2, 8.10); the conversation is closed at the end;
//   - ActionFeedback (spec 9.3): one report that says it comes from a check: 202, or 200 with
//     an alternative (noted), or 429 (noted).
//
// The broken Session JWTs and client assertions are built here, by unexported builders that
// sign with a delegated key of their own or with the identity's key (Config.Operator), so only
// the named defect differs. They are production-safe: Run sends them only to Config.ProbeURL and
// the Company's token endpoint, on the Company's own hosts; the access token goes, in its query
// or for another resource, only to Config.SignedInURL, on the same hosts. Every request is bounded by
// Config.Timeout, so a Company that does not answer fails transport.answers-in-time instead of
// stopping the run; after the token endpoint timed out once, it is not asked again.
//
// The probes' HTTP client (client.go) is hand-written over the transport's policy
// (transport.Config: developer mode's hosts and CA), not the engine's: a probe must send what a
// correct Personal Agent never would, and see what the Company answers as it came.
package conformance
