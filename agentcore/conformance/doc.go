// Package conformance is `poppydesk check`: an active run against one Company the user named,
// like a linter for the Company side. It reports each probe as pass, fail or skip, with its
// rule (agentcore/inspect's catalog: MUST, SHOULD or NOTE), the section and the evidence.
//
// Probes:
//
//   - discovery, every check (agentcore/discovery CollectAll): spec 3, 3.1, 3.2, 3.4;
//   - Session header verification (spec 5.2, 5.3): a wrong aud, a stale iat, no delegation, a
//     delegation signed by a key not in jwks_uri, a wrong typ, ath without a token, a
//     mismatched htu and htm — each must get HTTP 400 invalid_session;
//   - versions (spec 3.4): no Poppy-Version and an incompatible one must get
//     version_unsupported; the version poppy.json serves must be accepted;
//   - the correct request (spec 3, 5.5, 5.6): no redirect with credentials, a new Session not
//     ended on its first request, no 429.
//
// The Session probes need a safe GET endpoint that verifies the Session header signed out
// (Config.ProbeURL; the reference Company's /api/products) and Poppydesk's client metadata
// reachable by the Company (Config.Agent: in developer mode Poppydesk serves it on
// agent.localhost; with the reference Company in tests, its agent.localhost host does).
//
// The broken Session JWTs are built here, by unexported builders that sign with a delegated key
// of their own (a delegation from the real identity, so only the named defect differs). They
// are production-safe: Run sends them only to Config.ProbeURL, which must be on the Company's
// own hosts (its Session destinations' hosts or organization.domain), never to another host.
// Probes that would perform a real action run only when Config.AllowActions names them; this
// version has none that do.
package conformance
