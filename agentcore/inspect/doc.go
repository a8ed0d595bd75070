// Package inspect is what the Inspector knows about each exchange beyond its redacted headers
// and bodies: why it was made, which Session it belongs to, what the JWTs it carried said, and
// where the Company broke the specification.
//
// # Decoding before redaction
//
// agentcore/transport redacts every exchange before anyone sees it (docs/DESIGN.md invariant 5), so
// after redaction nothing is left to decode. The transport's hook (transport.Config.Inspect) sees
// the request as sent and the response as read: `poppydesk check` decodes there with [Decode];
// the engine takes [Defer], which copies what [Decode] needs into a [Pending] (in memory only,
// printing as its name alone), and its exchange log's writer decodes it off the request's path
// ([Pending.Details], the same result). Either way what is kept is only:
//
//   - the Session JWT's header and claims (spec 5.2) and its delegation's header and claims
//     (spec 5.2 "Delegated keys"), without `sub` and `agent_id`: User IDs and Agent IDs are
//     secret (spec 5.1), so they are replaced by [Hidden];
//   - the client assertion's header and claims (spec 4.1, RFC 7523 §3);
//   - the DPoP proof's header and claims (RFC 9449 §4.2), with its public key only;
//   - an access token's header and claims when the token is a JWT (spec 4.5), without `sub`;
//     an opaque token is described by its length only.
//
// Signatures, token values, codes, code verifiers, refresh tokens and private key members are
// never kept: a claim whose value is itself a JWT (such as the Session JWT's `poppy_dlg`) is
// replaced by its decoded form, and a JWK is kept without `d`, `p`, `q`, `dp`, `dq`, `qi`, `k`.
// What [Decode] returns is stored with the exchange (store.Exchange.Details) and shown to the
// user; the canary (e2e/canary_test.go) scans it for every secret of its run.
//
// # Causes
//
// [WithCause] puts on a context what made a request: the model's tool call (agentcore/modelapi
// over the Host's MCP middleware), the window's action (app's services) or the engine's own
// work. The transport hook reads it back with [CauseOf], so each exchange names its cause.
//
// # Findings
//
// A [Finding] is a rule of the specification the Company broke, in the Company developer's
// terms: the rule, MUST or SHOULD, the section, what was seen, what was expected and how to fix
// it. [Rules] is the one catalog; [NewFinding] builds a finding from it. Findings come from three
// places: [Decode] (rules visible in one exchange: Deprecation and Sunset headers, spec 3.4; an
// operation answered to a request that did not declare the extension, Operations 2; an
// authorization server's token response wider than asked, spec 4.7), discovery's CheckErrors
// ([FromCheckError]), and any package that notices a broken rule while it works and calls a
// [Reporter] (the approval queue: an operation answered to a request that did not declare the
// extension, through any interface, Operations 2, and a revision reused for other terms,
// Operations 3; the browser join: the browser-session page's headers, spec 6, checked by
// [JoinPageFindings]). The Host
// keeps the latest findings in a [Log]. The same rules are what `poppydesk check`
// (agentcore/conformance) probes actively.
//
// # Export
//
// [HAR] writes exchanges as HAR 1.2 and [Curl] as a curl command, both from the stored (redacted)
// exchanges, so an export holds no more than the Inspector shows.
package inspect
