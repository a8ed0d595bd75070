// Package operations is the pure core of the Operations extension version 2 in Poppydesk's engine:
// it parses and recognizes operations, renders their summaries safely, compares revisions, checks
// terms against the request that was sent, builds and parses approvals, and decides what may be
// approved and sent. It does no I/O; every time-dependent rule takes the current time as an
// argument (the caller injects its clock).
//
// Sections implemented (Operations extension v2 unless noted):
//
//   - Operations 2: the version this package speaks (Version, ExtensionsHeader).
//   - Operations 3: the operation and its fields (Parse); IDs use the characters of spec 8.2
//     (1 to 256 characters from the URL-safe base64 alphabet: letters, digits, "-" and "_");
//     "Formatting" (RenderSummary: only emphasis, strong emphasis, paragraphs and lists are
//     rendered; links, images, HTML and everything else are shown as their literal source text);
//     "New terms" (Diff); "Who can approve it" (CanApproveIn); the terms as the approval dialog
//     lists them (TermRows: one row per value, by JSON Pointer, in the Company's order).
//   - Operations 4: recognizing an operation in an API response (FromAPIResponse), an MCP tool
//     result (FromToolResult) and a conversation message (FromMessage).
//   - Operations 5: checking terms against the request and the model's stated intent
//     (CheckTerms); one approval covers one revision (CanApprove).
//   - Operations 6: the approval in the Poppy-Approval header (ApprovalHeader, ParseApprovalHeader,
//     an RFC 9651 Dictionary written and read by agentcore/headers), in MCP _meta (ApprovalMeta,
//     ApprovalFromMeta) and in a conversation message (ApprovalExtensions, ApprovalFromExtensions).
//   - Operations 7: the at-most-once state machine (Next, CanSend, CanAsk): an approval is
//     persisted before it is sent, retried with the same approval, and no new approval is asked
//     for the same action while an outcome is unknown.
//   - Spec 8.2: ID characters.
//   - RFC 6901 JSON Pointers: Flatten is the one walk of a JSON document by JSON Pointer, in
//     document order and bounded in depth; TermRows and CheckTerms read its nodes, and Diff
//     names the terms it compares with the same escaping.
//
// docs/DESIGN.md invariants: 2 (an approval names exactly the revision the user saw: Digest binds a
// decision to the revision, summary, terms and expiry; CanApprove refuses anything else),
// 3 (at most once: Next), 4 (summaries render only emphasis, strong emphasis, paragraphs and lists:
// RenderSummary produces text-only structures, never HTML, and makes invisible and bidi control
// characters visible).
//
// Hand-written parts and why: the canonical encoding behind Digest is a length-prefixed encoding
// of a few strings plus terms re-encoded with sorted keys and numbers kept as written (no library
// in go.mod implements RFC 8785, and the digest is only ever compared with digests this package
// computed); the word diff in Diff is a small LCS over whitespace-separated words, bounded in size.
// Summary parsing uses goldmark (CommonMark 0.31.2); the RFC 9651 headers are agentcore/headers'.
package operations
