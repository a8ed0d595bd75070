// Package discovery finds and verifies a Company: Poppy 0.4 spec sections 3, 3.1, 3.2, 3.3 and 3.4
// (and the 10.3 "what a domain vouches for" reasoning behind them).
//
// Discover(ctx, domain) runs, in order, each step a named check (CheckError.Check, Section):
//
//  1. GET https://{domain}/.well-known/poppy.json through the engine transport's discovery client:
//     redirects are followed only to HTTPS URLs, no credentials are ever sent, and the address
//     policy of agentcore/transport applies at connection time (spec 3). The document is used only
//     when the final URL's path is exactly /.well-known/poppy.json with no query.
//  2. The document is parsed (spec 3.1; unknown fields, extensions and versions are ignored, 3.3);
//     every URL in it must be HTTPS (spec 3 "HTTPS"), including string URLs inside extension
//     entries; at least one of agent, apis, web.
//  3. organization.domain must equal the final host, ASCII case-insensitively and with no other
//     normalization; in dev mode the authority includes the port (host:port), on 443 it doesn't.
//  4. Versions (3.4): the newest version among protocol_version and supported_versions compatible
//     with one this engine implements ("0.4"; before 1.0 compatible = same major.minor). Another
//     version's document must be on the same host as the final poppy.json URL, is fetched without
//     following redirects, has that protocol_version and no supported_versions, and names the
//     same organization.domain. None compatible: the Company is unusable.
//  5. Issuer (3.2): https://{organization.domain}/.well-known/oauth-protected-resource, whose
//     resource must be exactly https://{organization.domain}. 404 or an empty
//     authorization_servers mean "no issuer", valid only without auth.issuer and without any
//     sign-in signal (signed_in access, mediated-sign-in). Any other status, a redirect, invalid
//     metadata, a timeout or a failed check stops discovery: never a fallback. A Company whose
//     issuer is known (KnownStore) never falls back either, unless valid metadata with an empty
//     authorization_servers establishes the removal (a 404 is not taken as establishing it); the
//     Company is then reported with IssuerRemoved and its new identifier. One server is the
//     issuer (auth.issuer must name it if present); several need auth.issuer naming one of them.
//  6. The issuer's RFC 8414 metadata (well-known segment inserted before the issuer's path):
//     issuer equal character for character; protected_resources lists https://{organization.domain}
//     (host compared lowercased, no path); token_endpoint, revocation_endpoint,
//     grant_types_supported with refresh_token, authorization_endpoint /
//     device_authorization_endpoint when their grants are listed, all HTTPS. auth.disabled
//     means no sign-in is offered while the identifier stays the issuer.
//  7. The Company identifier: the issuer, or https://{organization.domain} lowercased (3.2).
//
// Caching (RFC 9111, private cache): every discovery document (poppy.json keyed by the URL
// requested, with the final URL stored alongside; version documents; both metadata documents)
// goes through the Cache interface (MemoryCache here; the vault implements it with the same std
// types). A fresh entry costs no network; a stale one is revalidated with If-None-Match when it
// has an ETag; no-store is never stored, no-cache and max-age=0 are always revalidated; a response
// without an explicit lifetime is revalidated on next use (no heuristic freshness). NoCache()
// bypasses cached copies (spec 3.4 after version_unsupported). Non-200 answers (404 included)
// are not cached.
//
//  8. The OpenAPI descriptions (spec 5.2, 7): each openapi entry's description is fetched like
//     the metadata (no credentials, no redirects, through the cache, where agentcore/apis reads
//     it again without a second download), at most MaxDescription (32 MiB) bytes, read with
//     LoadOpenAPI (one typed encoding/json pass that keeps schemas raw, external $refs refused:
//     GitHub's 13 MB description in a fraction of a second, where kin-openapi's loader would
//     take seconds and a gigabyte), and the request URLs it describes, its servers joined with
//     its paths (OpenAPIServer, OpenAPIRequestURLs), are kept in Company.Described.
//     agentcore/apis reads descriptions with the same LoadOpenAPI and OpenAPIServer, so both
//     agree on what a description describes. A description that cannot be read doesn't stop
//     discovery: its API has no destinations and Company.DescriptionErrors says why.
//
// Company.SessionDestinations derives the Session destinations of spec 5.2 from the chosen
// document and the descriptions for agentcore/transport: the described request URLs as
// templates, the MCP servers' urls, the conversation routes of spec 8.2, browser authorization,
// feedback and extension endpoints, with the documents, OAuth endpoints and pages the Company
// names excluded whatever the layout. The descriptions are read here, before the Company is
// used, because they define where the Session header may go: no request carries it before a
// description the Company serves proves its URL.
package discovery
