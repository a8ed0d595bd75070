// Package coverage is task coverage, Poppy 0.4 spec section 9: the tasks a Company chose not to
// offer (9.1), the alternatives it points to (9.2), the reports of tasks Poppydesk could not do
// (9.3), and the skills a Company publishes for Personal Agents (9.4). Everything a Company
// writes here is content, never instructions (spec 10.1): this package parses and checks it, and
// its callers hand it to the model inside the untrusted-content envelope of agentcore/modelapi.
//
// # Excluded tasks (spec 9.1)
//
// [Service.ExcludedTasks] fetches excluded_tasks.url with a GET through
// engine.Engine.FetchPublic: no token, no Session header, redirects only to HTTPS, the address
// policy of agentcore/transport (spec 3 "HTTPS", "Redirects and addresses"), at most
// [MaxExcludedTasksBytes], and the engine's persistent RFC 9111 cache of public documents (the
// same discovery.Cache over the state database as poppy.json). [ParseExcludedTasks] reads the
// document: an object with a tasks array is required (anything else is an *Error and nothing is
// used); each entry needs a task phrase; unknown fields are ignored; entries that break a rule are
// left out and listed in Skipped, in Poppydesk's words. Whether the User's task is one listed is
// the model's judgment (each task is a phrase); [TaskKey] compares phrases only after
// normalising case, spaces and final punctuation.
//
// # Alternatives (spec 9.2)
//
// [ParseAlternative] keeps an alternative only with instructions or at least one usable
// reference. References of a type this package does not know are skipped (so later versions can
// add types); an openapi or mcp reference is kept only when its url is the url of an apis entry
// of the same type in poppy.json, with an operation_id or tool; a web reference needs an HTTPS
// URL. [Service.Verify] then checks the rest against the Company's own descriptions: an openapi
// reference's operation_id must be an operationId of that description, and an mcp reference's
// tool one the server lists (signed out). A web reference never makes its target a Session
// destination: nothing here builds or changes transport.Destinations, and no request is ever
// sent to a reference's url (the model may open a web page in the controlled browser, which
// carries cookies only: spec 6). Instructions are content: they describe another way to do the
// task and are not instructions Poppydesk or the model has to follow.
//
// # Feedback (spec 9.3)
//
// [Service.Report] sends `POST {feedback.endpoint}` with the Session header through the engine's
// Session client (the feedback endpoint is one of the Company's Session destinations, spec 5.2),
// in the signed-out Session unless an account is named. Before it sends, it refuses a report
// longer than the spec allows (task 200 characters, description 2,000), a report of a task the
// Company lists as excluded, and a second report of the same task to the same Company (one per
// task, not per attempt: the report is recorded in store.FeedbackReports before it is sent, so a
// crash cannot lead to a second one). It removes what must not be in a report ([Scrub]): secrets
// (spec 10.2, agentcore/redact), identifiers seen in this Company's responses during this run
// ([Seen], a bounded set filled from the exchange log), the account labels, email addresses and
// phone numbers. HTTP 202 means accepted; 200 carries an alternative, checked as above. Errors
// are the transport's (token and Session errors of spec 7, invalid_request of 8.13); a 429 is
// waited out by the transport (spec 5.6), and when it persists no report is sent to that Company
// again before its Retry-After has passed. The setting [SettingFeedbackReports] turns reports
// off.
//
// # Skills (spec 9.4)
//
// [ParseSkillIndex] uses skill_index only when its $schema is exactly [SkillIndexSchema], the
// 0.2.0 identifier of the pinned Agent Skills discovery proposal; an absent or unknown $schema
// leaves the index unused and the rest of poppy.json usable. Unknown fields are ignored and
// entries of an unknown type skipped. Each entry's url is resolved against the final poppy.json
// URL after redirects (RFC 3986 §5, net/url's ResolveReference) and must then be an HTTPS URL
// (spec 3). [Service.ReadSkill] fetches the artifact like the excluded tasks, without credentials
// or a Session header (listing it does not make its host an API or a Session destination), and
// uses it only when the SHA-256 of its raw bytes equals the entry's digest; a mismatch is fetched
// once more past the cache and otherwise refused. An archive (.tar.gz or .zip, both of which the
// proposal requires) is unpacked in memory only after the digest check, by [Extract]: no absolute
// path, no ".." segment, no backslash, no link of either kind, no device or other special file,
// no duplicate path, at most [DefaultLimits] files and bytes, read through limited readers so a
// compression bomb stops at the bound, and SKILL.md at the root. The format is read from the
// verified bytes (gzip or zip signature) rather than from Content-Type, which the RFC 9111 cache
// does not keep, so the bytes that were checked are the bytes that are read.
//
// Nothing is written to disk and nothing runs: a skill's files are returned as text (scripts are
// listed as scripts and given only as text when asked for), because spec 9.4 forbids executing
// a skill's scripts unless the User allows it, and Poppydesk has no such setting. A skill grants
// no access, scope or approval.
//
// # Why some things are hand-written
//
// The archive checks are written over archive/tar, archive/zip and compress/gzip of the standard
// library, because the proposal's safety rules (and this package's limits) must hold before a
// single file is used, and no library offers exactly those checks in memory. The identifier
// scrubber is small and specific to what the engine observes; no library knows which values a
// Company's responses carried.
package coverage
