// Package modelapi is the model's interface of Poppydesk: a local MCP server (the official Go
// SDK, github.com/modelcontextprotocol/go-sdk) through which any LLM agent that speaks MCP can
// ask Poppydesk for everything and approve nothing (docs/DESIGN.md "Trust boundaries", invariants 1
// and 5).
//
// # What the model can do
//
// The tools (see [NewServer]) list the Companies the user has added, discover and describe
// Companies (spec 3, 3.1), list the
// operations of their OpenAPI APIs and the tools of their MCP servers (spec 7), call them
// through the approval queue (agentcore/approvals; Operations 4-7), ask the USER to sign in
// (request_sign_in records a request that the window shows; it never starts a sign-in), read and
// wait for the state of a pending approval, and read its own recent activity. They also browse a
// Company's website in the controlled browser joined to the Session (spec 6; browser_tools.go),
// talk with Company Agents (spec 8; conversation_tools.go), and read the tasks a Company does not
// offer, report a task they could not do and read a Company's skills (spec 9;
// coverage_tools.go). A large API (GitHub's REST API has 1,223 operations) is read a page at a
// time: list_api_operations returns one compact line per operation, filtered by tag, path prefix
// or words, in pages of at most ListPageBytes with a cursor to the next, and
// describe_api_operation gives one operation in full with the component schemas its $refs name,
// within DescribeSchemaBytes (operations_tools.go; both read the engine's shared description
// cache, apis.Descriptions). NewServer adds these five groups from one list; nothing registers
// tools from init.
//
// The tools and their MCP annotations (readOnly, destructive, idempotent, openWorld):
//
//	list_companies       -                               ro  -   idem  closed
//	discover_company     domain                          ro  -   idem  open
//	describe_company     company                         ro  -   idem  open
//	list_api_operations  company, api?, tag?, path_prefix?, query?, cursor?, limit?
//	                                                     ro  -   idem  open
//	describe_api_operation company, operation_id, api?, schemas?
//	                                                     ro  -   idem  open
//	list_mcp_tools       company, server?, account?      ro  -   idem  open
//	call_api_operation   company, operation_id, body?... -   dst -     open   (queue.CallAPI)
//	call_mcp_tool        company, tool, arguments?, ...  -   dst -     open   (queue.CallTool)
//	request_sign_in      company, scopes, reason         -   -   idem  closed (records a request)
//	get_approval         approval_id                     ro  -   idem  closed
//	wait_for_approval    approval_id, timeout_seconds?   ro  -   idem  closed (queue.Wait, <= 300 s)
//	recent_activity      limit?                          ro  -   idem  closed
//
// Every tools/call is recorded in an [Activity] ring (tool, Company, time, status, duration),
// which the window lists (app/fronts Activity).
//
// # What a client gets
//
// Every input property has a JSON Schema type, so clients that convert arguments by type (the
// MCP Inspector CLI) send them right: an API body is an object in body, or any JSON text in
// body_json. Every tool has an outputSchema (schema.go) that its structuredContent follows. The
// "status" is one word of status.go to branch on (performed, waiting_for_user, declined, failed,
// outcome_unknown, waiting_for_sign_in, refused, blocked, network_error, ...); the approval
// queue's outcomes and an approval's states map onto it one to one (outcomeStatus, stateStatus).
// The text comes in two parts: Poppydesk's own words first, then the Company's content behind
// [UntrustedWarning], followed by the Company's images, audio and resources as content parts.
// Errors are classified in one place (errors.go): Poppydesk's own failures stay outside the
// envelope, what a Company wrote goes inside. Long waits (wait_for_approval, the browser tools)
// send progress notifications to a client that sent a progress token (progress.go), the Company
// MCP server's progress is passed on by call_mcp_tool, and a client's notifications/cancelled
// ends the call's context, so a wait ends at once and changes nothing.
//
// # What the model can never do (Operations 5, spec 10.1, 10.2)
//
//   - Approve. No tool, argument, resource or prompt approves an operation, completes a sign-in,
//     authorizes a browser join code, or changes a setting that affects those. No tool has an
//     approve or decision parameter; every tool's input schema has additionalProperties false and
//     arguments are decoded strictly, so unknown arguments (approved, decision, ...) are refused
//     with an error that says so. Tool arguments and API bodies that carry the approval _meta
//     key ("personalagentprotocol.org/approval") or a top-level "_meta" are refused too, and the
//     model's own request _meta is never forwarded. Operations 5: "MUST take the User's answer
//     through its own interface".
//   - See a secret (spec 10.2): results are built from the approval queue's Outcome (status,
//     HTTP status, the Company's body and words) and from discovery; tokens, keys, Session JWTs,
//     authorization and device codes, browser join codes, cookies, User IDs and sids are not in
//     them. As defence in depth every string that reaches the model passes through
//     agentcore/redact (JWT-shaped values and secret-named JSON fields are masked), because a
//     hostile Company could echo a credential back in its own content.
//   - Take Company content for instructions (spec 10.1, Operations 8): everything a Company
//     wrote (names, descriptions, summaries, terms, response bodies, tool results, error texts)
//     is returned inside structuredContent "untrusted_company_content" {"company", "data"} and
//     in a text part that starts with the fixed line [UntrustedWarning], after Poppydesk's own
//     part. Poppydesk's own words are in "status", "message" and "detail", in plain language
//     ("not performed; waiting for the user's decision in Poppydesk").
//
// # Transport
//
// The app serves the MCP server where package endpoint says: a Unix socket found from the OS
// user and home folder alone (in a 0700 folder of the user, the socket 0600; on Linux the peer's
// uid is checked with SO_PEERCRED before a connection is served), or on Windows a named pipe whose
// security descriptor admits only the user. Each connection is one MCP session over
// newline-delimited JSON-RPC ([Serve]). MCP clients start the stdio relay of package relay
// (`poppydesk mcp`, or the poppydesk-mcp program), which passes their messages on. There is no
// TCP listener.
//
// # Sign-in needs
//
// When a Company refuses one of the model's calls for lack of sign-in or scope (a 401 challenge,
// insufficient_scope, or a refresh that failed; spec 7, 4.7), the call is not performed: Poppydesk
// records a sign-in request itself, with its own reason (which scopes, for which call), in the
// same SignInRequests that the request_sign_in tool uses, and the model gets the status
// waiting_for_sign_in ("not performed; waiting for the user to sign in in Poppydesk"). Nothing
// here starts a sign-in; only the window does, on the user's gesture.
//
// exampleagent.go is the scripted example agent (no LLM) behind `poppydesk example-agent` and the
// demo's "Run the example agent" button: it uses only this MCP interface.
//
// # Why some things are hand-written
//
// Input and output schemas are written by hand (keywords JSON Schema draft-07 and 2020-12 share,
// additionalProperties false on Poppydesk's own keys) and the
// arguments decoded with encoding/json's DisallowUnknownFields instead of the SDK's inferred
// schemas, so that an unknown argument gets an error in words that names it and says what to do,
// and so that free-form Company inputs (an API body, a tool's arguments) can be checked for
// approval keys before anything is sent.
package modelapi
