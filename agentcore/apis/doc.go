// Package apis calls a Company's APIs as Poppy 0.4 spec section 7 describes: OpenAPI 3.0 and 3.1
// descriptions (read with discovery.LoadOpenAPI; the schemas of one operation at a time checked
// with github.com/google/jsonschema-go) and remote MCP servers over Streamable HTTP (the
// official Go SDK, github.com/modelcontextprotocol/go-sdk, as the client).
//
// Spec sections implemented:
//
//   - 3.1 "apis", 7 "API types": Select sorts poppy.json's apis into OpenAPI and MCP entries and
//     lists every entry of an unknown type as skipped, with the reason ("Personal Agents SHOULD
//     skip API types they don't recognize").
//   - 7 OpenAPI: FetchOpenAPI fetches the description WITHOUT the Session header (a description
//     document is not a Session destination, spec 5.2) through the transport's safe client (HTTPS
//     only, address policy, no redirects followed, at most MaxDescription = 32 MiB, which covers
//     the large public descriptions of today: GitHub's REST API is 13 MB), and ParseOpenAPI lists
//     its operations with parameters, request bodies, responses and security requirements, each
//     scope with the description of the OAuth2 security scheme that defines it (spec 3.1
//     auth.scopes, 4.7). External $refs are refused and never fetched, so a description cannot
//     make the engine contact another URL. The server URL comes from the operation's, the path's
//     or the document's servers (first match), resolved against the description URL, with server
//     variables at their defaults (discovery.OpenAPIServer, shared with discovery, which reads
//     the same descriptions with the same discovery.LoadOpenAPI to know the Company's Session
//     destinations); it must be HTTPS (spec 3) and every operation's URL must be a Session
//     destination (spec 5.2), or the operation is listed with the reason it is unavailable.
//   - 5.2 destinations of descriptions read later: Config.Described (one per Company, shared by
//     its Clients) keeps the request URLs of the descriptions this run read. FetchOpenAPI records
//     them, and Send signs a URL outside the Session destinations only when a description describes
//     it, reading the descriptions not read yet first, unsigned. What the Session destinations refuse
//     (documents, OAuth endpoints, pages, /.well-known/) stays refused.
//   - Descriptions (the engine owns one, set as Config.Descriptions) keeps every description the
//     engine uses: fetched once per version and kept by the RFC 9111 rules of the discovery cache
//     (ETag, Cache-Control max-age / no-cache / no-store, If-None-Match revalidation when stale),
//     over the same discovery.Cache (the state database) that discovery fetched it through, so
//     the copy discovery read is used without a second download while fresh; parsed once and
//     shared read-only by the approval queue, the model's tools and the window, with at most
//     MaxEntries parsed documents (and MaxBytes of them) in memory. Each Client sees a parsed
//     document through its own Session destinations and records its request URLs in its
//     Config.Described.
//
// Why the index is decoded with encoding/json rather than by kin-openapi: kin-openapi's loader
// builds and resolves the whole schema graph of a document. For GitHub's description that costs
// about 11 times a plain encoding/json decode of the same bytes and allocates about 1 GB
// (BenchmarkGitHubDescriptionKinOpenAPI). discovery.LoadOpenAPI decodes into typed structs that
// keep schemas as raw JSON, and the index (index.go) resolves only the local references the
// engine needs (components parameters, request bodies, responses, path items, security schemes):
// about 0.8 times the plain decode, with a peak heap about the document's size
// (BenchmarkGitHubDescription). Description.Detail checks each operation that is described to
// the model, with the component schemas it references, so that a reference that does not
// resolve or a schema that is not a schema object is reported, as the Company's error, before a
// request is built from it. The component schemas an operation reaches are found from the $refs
// of each schema as read (not from text that looks like a reference in an example or a
// description), and each is checked once per description, however many operations reach it.
// Each schema is read with github.com/google/jsonschema-go, the JSON
// Schema library of the official MCP SDK (so already in every Poppydesk program), rather than
// loaded with kin-openapi: kin-openapi's package imports santhosh-tekuri/jsonschema, whose
// package initialisation compiles five JSON Schema meta-schemas in every process that links it,
// about 3.4 ms of each start of every Poppydesk program, the half of the start of `poppydesk
// mcp` that an MCP client waits for (cmd/poppydesk-mcp BenchmarkClientStart); kin-openapi
// remains a test dependency, for BenchmarkGitHubDescriptionKinOpenAPI.
//   - 7 calls, 5.2, 5.6: Client.Send sends through the Session's signed-request pipeline
//     (Config.Session, transport.SessionClient: the destination check, the account's token,
//     DPoP, a fresh Session JWT on each attempt, no redirect followed, and one policy per answer:
//     429, use_dpop_nonce, invalid_token, session_ended, version_unsupported; docs/DESIGN.md "The
//     signed request"). Error statuses become *transport.ProtocolError with the codes of spec 7.
//   - Idempotency-Key (draft-ietf-httpapi-idempotency-key-header): a random key on every unsafe
//     method (POST, PUT, PATCH, DELETE); the same key on 429 re-sends of the same request.
//   - 7 MCP servers: ConnectMCP uses the SDK's StreamableClientTransport with an *http.Client over
//     the same pipeline (transport.SessionClient.RoundTripper), so EVERY HTTP request of the MCP
//     transport (initialize, notifications, tool calls, the session DELETE) is checked and
//     carries a fresh Session JWT and the MCP server's own access token when signed in (spec 7),
//     with the pipeline's policy for each answer; a refusal at the Company's door becomes a
//     *transport.ProtocolError (wrapped by the SDK; use errors.As). In front of the pipeline, this
//     package's own step bounds each response body (MaxMCPResponseBody) and refuses to resume a
//     stream it cut. The standalone SSE stream is off: Poppy needs no server-initiated messages.
//     Each exchange (connect, list, call) is bounded by the caller's ToolCall.Timeout or else the
//     transport's exchange timeout (30 s), as a context deadline: a server answers a POST with
//     SSE headers at once and may stream for as long as it likes, so the response-header timeout
//     alone does not bound a call (MCPTimeoutError). A tool result keeps every content block
//     (text, image, audio, embedded resource, resource link) within MaxToolContentBytes, with a
//     note for what was cut; a caller that passes a progress function (WithProgress) gets the
//     server's progress notifications, asked for with a token of Poppydesk's own.
//
// Operations extension v2 hooks (Operations 4, 6): a Result carries the raw HTTP status and body
// even for error statuses (together with the *transport.ProtocolError), so a 403
// approval_required and its operation can be recognized; Request.Again re-sends the same method,
// URL and body with extra headers (Poppy-Approval) and a new or no Idempotency-Key (Operations 6:
// the first key doesn't carry over). For MCP, a ToolResult keeps isError and structuredContent as
// raw JSON, and ToolCall.WithApproval re-sends the same tool call with
// _meta["personalagentprotocol.org/approval"].
//
// This package signs nothing itself: the pipeline does, once for every kind of request. Send uses
// the pipeline's Send, which returns an error answer's whole body with its *ProtocolError (the
// body of a 403 approval_required is the operation); a URL outside the Session destinations that
// a description read this run describes is proven to the pipeline through Request.Prove.
package apis
