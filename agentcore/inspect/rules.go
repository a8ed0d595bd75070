package inspect

import "github.com/poppydesk/poppydesk/agentcore/discovery"

// Rule IDs. The catalog below gives each its level, section, expectation and general fix.
const (
	// Discovery (spec 3, 3.1–3.4), one per discovery.CheckError check.
	RuleDiscoveryFetch         = "discovery.fetch"
	RuleDiscoveryFinalURL      = "discovery.final-url"
	RuleDiscoveryFields        = "discovery.fields"
	RuleDiscoveryHTTPS         = "discovery.https"
	RuleDiscoveryDomain        = "discovery.organization-domain"
	RuleDiscoveryVersion       = "discovery.version"
	RuleDiscoveryVersionDoc    = "discovery.version-document"
	RuleDiscoveryResourceMeta  = "discovery.resource-metadata"
	RuleDiscoveryIssuerSelect  = "discovery.issuer-selection"
	RuleDiscoveryKnownIssuer   = "discovery.known-issuer"
	RuleDiscoveryASMetadata    = "discovery.as-metadata"
	RuleDiscoveryIssuerMatch   = "discovery.issuer-match"
	RuleDiscoveryProtectedRes  = "discovery.protected-resources"
	RuleDiscoverySignInConfig  = "discovery.sign-in-configuration"
	RuleDiscoveryRedirectOther = "discovery.redirect-other-path"
	RuleDiscoveryVersionsAgree = "discovery.versions-agree"

	// Sessions and versions (spec 3.4, 5.2–5.6).
	RuleSessionVerify        = "session.verify"
	RuleSessionEndedFresh    = "session.ended-fresh"
	RuleVersionChecked       = "version.checked"
	RuleVersionListedRefused = "version.listed-refused"
	RuleVersionDeprecation   = "version.deprecation"
	RuleRateLimited          = "rate.limited"
	RuleRedirectCredentials  = "redirect.with-credentials"
	RuleResourceDPoPNonce    = "dpop.resource-nonce"
	RuleSessionNewKey        = "session.new-delegated-key"
	RuleSessionSidOwner      = "session.sid-owner"
	RuleUnknownIgnored       = "request.unknown-ignored"
	RuleHTTPSOnly            = "request.https-only"
	RuleNoCookies            = "request.no-cookies"
	RuleTokenInURL           = "request.token-in-url"

	// The authorization server (spec 4).
	RuleOAuthIss            = "oauth.iss"
	RuleOAuthIssWrong       = "oauth.iss-wrong"
	RuleOAuthPKCE           = "oauth.pkce-required"
	RuleOAuthAssertionAud   = "oauth.assertion-aud-exact"
	RuleOAuthRedirectExact  = "oauth.redirect-uri-exact"
	RuleOAuthScopeWider     = "oauth.scope-wider"
	RuleOAuthDeviceHost     = "oauth.device-host"
	RuleOAuthDeviceLink     = "oauth.device-link-no-approve"
	RuleOAuthRefreshRevoked = "oauth.refresh-revoked"
	RuleOAuthNoRotation     = "oauth.refresh-no-rotation"
	RuleOAuthDPoPNonce      = "oauth.dpop-nonce"
	RuleOAuthSlowDown       = "oauth.device-slow-down"
	RuleOAuthClientMetadata = "oauth.client-metadata"
	RuleScopeHints          = "auth.scope-hints"

	// The Operations extension v2.
	RuleOpsUndeclared       = "operations.undeclared"
	RuleOpsSummaryFormat    = "operations.summary-formatting"
	RuleOpsTermsMatch       = "operations.terms-match"
	RuleOpsRevisionOnRetry  = "operations.new-revision-on-retry"
	RuleOpsInProgress       = "operations.in-progress"
	RuleOpsLostResponse     = "operations.lost-response"
	RuleOpsReusedRevision   = "operations.reused-revision"
	RuleOpsAtMostOnce       = "operations.at-most-once"
	RuleOpsRevisionOnChange = "operations.revision-on-change"
	RuleOpsApprovalMembers  = "operations.approval-members"
	RuleOpsOtherAction      = "operations.other-action"

	// Session destinations, operations declared, timely answers (spec 5.2, Operations 2, 4.7).
	RuleDestinationsDescribed = "session.destinations-described"
	RuleDescriptionAtRoot     = "session.description-at-root"
	RuleOAuthNoScope          = "oauth.no-scope-granted"
	RuleAnswersInTime         = "transport.answers-in-time"
	RuleMCPResourceMetadata   = "mcp.resource-metadata"
	RuleMCPTokenElsewhere     = "mcp.token-elsewhere"

	// Task coverage (spec 9).
	RuleSkillDigest          = "coverage.skill-digest"
	RuleSkillArchive         = "coverage.skill-archive"
	RuleAlternativeReference = "coverage.alternative-reference"
	RuleFeedbackAlternative  = "coverage.feedback-alternative"
	RuleFeedbackRateLimit    = "coverage.feedback-rate-limit"
	RuleAlternativeContent   = "coverage.alternative-content"

	// Web browsing (spec 6).
	RuleJoinPageHeaders  = "join.page-headers"
	RuleJoinCodeExpired  = "join.code-expired"
	RuleJoinCodeUsed     = "join.code-used"
	RuleJoinOtherBrowser = "join.code-other-browser"
	RuleJoinCookie       = "join.cookie-missing"
	RuleJoinTokenRefused = "join.token-refused"
	RuleJoinOnlyCookie   = "join.only-join-cookie"

	// Conversations (spec 8).
	RuleConvRetrySameID     = "conversation.retry-same-id"
	RuleConvDuplicateEvents = "conversation.duplicate-events"
	RuleConvStreamCut       = "conversation.stream-cut"
	RuleConvCursorExpired   = "conversation.cursor-expired"
	RuleConvUnknownValues   = "conversation.unknown-values"
	RuleConvSlowStream      = "conversation.slow-stream"
	RuleConvNoSSE           = "conversation.no-sse"
	RuleConvFields          = "conversation.fields"
	RuleConvOwner           = "conversation.owner-only"
	RuleConvUserRequested   = "conversation.user-requested-checked"
)

var catalog = []Rule{
	{RuleDiscoveryFetch, MUST, "spec 3", "poppy.json is served", "HTTP 200 with the document at https://{domain}/.well-known/poppy.json", "serve poppy.json at /.well-known/poppy.json on the domain, over HTTPS"},
	{RuleDiscoveryFinalURL, MUST, "spec 3", "poppy.json's final URL", "after redirects, the path is exactly /.well-known/poppy.json with no query", "redirect only to /.well-known/poppy.json on the final host"},
	{RuleDiscoveryFields, MUST, "spec 3.1", "poppy.json fields", "every required field with its type", "fix the field named in what was seen"},
	{RuleDiscoveryHTTPS, MUST, "spec 3", "HTTPS URLs", "every URL the Company gives is https://", "publish every URL as https://"},
	{RuleDiscoveryDomain, MUST, "spec 3, 3.1", "organization.domain", "organization.domain is the host that served poppy.json after redirects", "set organization.domain to the host (with :port off 443) that serves poppy.json"},
	{RuleDiscoveryVersion, MUST, "spec 3.4", "a compatible protocol version", "protocol_version or supported_versions has a version compatible with 0.4", "serve a 0.4 document as protocol_version or in supported_versions"},
	{RuleDiscoveryVersionDoc, MUST, "spec 3.4", "supported_versions documents", "each listed document is on the same host, served without redirects, with its protocol_version", "serve each supported_versions URL directly, with the listed protocol_version"},
	{RuleDiscoveryResourceMeta, MUST, "spec 3.2", "protected resource metadata", "RFC 9728 metadata at /.well-known/oauth-protected-resource, or 404 for no issuer", "serve the metadata with resource = https://{organization.domain} and authorization_servers"},
	{RuleDiscoveryIssuerSelect, MUST, "spec 3.1, 3.2", "issuer selection", "auth.issuer, when given, is one of the listed authorization_servers", "list the issuer in authorization_servers, or name it in auth.issuer"},
	{RuleDiscoveryKnownIssuer, MUST, "spec 3.2", "the known issuer", "a domain keeps its issuer", "keep the issuer stable; a change changes every User ID"},
	{RuleDiscoveryASMetadata, MUST, "spec 3.2", "authorization server metadata", "RFC 8414 metadata with token_endpoint, revocation_endpoint and grant_types_supported including refresh_token", "publish the missing metadata field"},
	{RuleDiscoveryIssuerMatch, MUST, "spec 3.2", "issuer match", "the metadata's issuer equals the issuer URL character for character", "set issuer in the authorization server metadata to exactly the URL it is served under"},
	{RuleDiscoveryProtectedRes, MUST, "spec 3.2", "protected_resources lists the domain", "the issuer's protected_resources lists https://{organization.domain}", "add https://{organization.domain} to protected_resources in the authorization server metadata"},
	{RuleDiscoverySignInConfig, MUST, "spec 3.2", "sign-in configuration", "a Company that offers sign-in has an issuer", "publish an issuer, or set auth.disabled"},
	{RuleDiscoveryVersionsAgree, MUST, "spec 3.4", "every served version names one Company", "poppy.json and each supported_versions document have the same organization.domain and select the same issuer", "keep organization.domain and auth.issuer the same in every document you serve"},
	{RuleDiscoveryRedirectOther, MUST, "spec 3", "poppy.json redirect target", "a redirect keeps the path /.well-known/poppy.json", "redirect to https://{host}/.well-known/poppy.json"},

	{RuleSessionVerify, MUST, "spec 5.3", "Session header verification", "a Session JWT that fails a check of 5.2/5.3 gets HTTP 400 invalid_session", "verify the delegation, typ, aud, iat, htm/htu and ath before using Session claims; answer 400 {\"error\":\"invalid_session\"}"},
	{RuleSessionEndedFresh, SHOULD, "spec 5.5", "a new Session ends only when the Company chose to end it", "a new sid starts a Session that lasts beyond its first request", "remember ended sids only for Sessions the Company ended"},
	{RuleVersionChecked, MUST, "spec 3.4", "Poppy-Version is checked", "a request without Poppy-Version, or with an incompatible one, gets HTTP 400 version_unsupported", "check Poppy-Version on every endpoint that verifies the Session header"},
	{RuleVersionListedRefused, MUST, "spec 3.4", "the listed version is accepted", "a request in a version poppy.json serves is handled in it", "accept Poppy-Version values compatible with protocol_version and supported_versions"},
	{RuleVersionDeprecation, NOTE, "spec 3.4", "Deprecation and Sunset", "a version in use is not deprecated", "none needed; Personal Agents should move to a newer version before the Sunset date"},
	{RuleRateLimited, NOTE, "spec 5.6", "rate limits", "requests within limits are answered; a 429 carries Retry-After", "check the rate limit; a 429 must carry Retry-After"},
	{RuleRedirectCredentials, MUST, "spec 3", "no redirects on credentialed requests", "API and protocol endpoints answer requests with credentials without a redirect", "serve the endpoint at the URL poppy.json names instead of redirecting"},
	{RuleSessionNewKey, MUST, "spec 5.2", "a new delegated key in a Session", "a request in a known Session signed with a new delegated key is handled like the first", "verify each Session JWT with the delegation it carries; never pin a Session to its first delegated key"},
	{RuleSessionSidOwner, MUST, "spec 5.3", "a Session belongs to its User", "a Session JWT with a known sid and another User ID gets HTTP 400 invalid_session", "key Sessions by client_id and sid, and refuse a known sid whose sub or agent_id differs"},
	{RuleUnknownIgnored, MUST, "spec 3.3", "unknown extensions and fields are ignored", "a correct request that also declares an unknown extension and carries an unknown claim is handled as without them", "ignore extensions, versions and fields you do not support instead of refusing the request"},
	{RuleHTTPSOnly, MUST, "spec 3", "a URL of another scheme is refused", "a Session JWT whose htu is the http:// form of the request URL gets HTTP 400 invalid_session", "refuse every URL a Personal Agent gives that is not https://, the Session JWT's htu included; compare htu with the request URL, scheme and all"},
	{RuleNoCookies, MUST, "spec 5.6", "no cookies required", "a correct request with the Session header (and the access token) and no cookie is handled", "identify the Personal Agent by its Session header and access token; never require a cookie from it"},
	{RuleTokenInURL, MUST, "spec 5.6", "no tokens from a URL", "a request whose access token is only in the URL's query (access_token) is refused like one without it", "read the access token only from the Authorization header, never from the query or the body"},
	{RuleResourceDPoPNonce, NOTE, "spec 4.5, RFC 9449 §9", "resource DPoP nonces", "a DPoP proof without a nonce is accepted, or use_dpop_nonce comes with DPoP-Nonce", "none needed if intended; every nonce costs one extra round trip"},

	{RuleOAuthIss, MUST, "spec 4.2, RFC 9207", "iss on authorization responses", "the authorization response carries iss = the issuer", "add iss (the issuer) to the redirect back to the Personal Agent, for success and error responses"},
	{RuleOAuthIssWrong, MUST, "spec 4.2, RFC 9207", "iss names the issuer", "iss equals the issuer in the metadata", "set iss on authorization responses to the metadata's issuer"},
	{RuleOAuthPKCE, MUST, "spec 4.2, RFC 9700 §2.1.1", "PKCE is required", "an authorization request without code_challenge is refused", "require code_challenge with S256 on every authorization request"},
	{RuleOAuthAssertionAud, MUST, "spec 4.1, 10.4", "the client assertion's aud", "a client assertion whose aud is not exactly the issuer is refused with invalid_client", "compare aud to the issuer as one string, character for character"},
	{RuleOAuthRedirectExact, MUST, "spec 4.2, RFC 9700 §4.1", "exact redirect_uri", "a redirect_uri not exactly one of the client metadata's is refused", "compare redirect_uri to redirect_uris exactly (loopback: any port, RFC 8252 §7.3)"},
	{RuleOAuthScopeWider, MUST, "spec 4.7", "granted scopes", "the token response's scope is within what was asked", "grant at most the requested scopes"},
	{RuleOAuthDeviceHost, MUST, "spec 4.3", "verification_uri on the Company's hosts", "verification_uri is on the issuer's or the Company's host", "serve the device verification page on the issuer's host"},
	{RuleOAuthDeviceLink, MUST, "spec 4.3", "opening the device link approves nothing", "after verification_uri_complete is opened, polling still gets authorization_pending", "show the request on the verification page and approve it only when the person submits the page"},
	{RuleOAuthRefreshRevoked, NOTE, "spec 4.4, 5.5", "refresh tokens stay valid", "a refresh token just issued is accepted", "revoke refresh tokens only on sign-out, disconnection or reuse detection"},
	{RuleOAuthNoRotation, NOTE, "spec 4.4, RFC 6749 §6", "refresh token rotation", "a refresh answers with a new refresh token (rotation), or the old one keeps working", "none needed; rotation is recommended (RFC 9700 §4.14)"},
	{RuleOAuthDPoPNonce, NOTE, "spec 4.5, RFC 9449 §8", "token endpoint DPoP nonces", "a DPoP proof without a nonce is accepted, or use_dpop_nonce comes with DPoP-Nonce", "none needed if intended"},
	{RuleOAuthSlowDown, NOTE, "spec 4.3, RFC 8628 §3.5", "device polling", "polling at the given interval is answered with authorization_pending", "answer slow_down only when the client polls faster than interval"},
	{RuleScopeHints, MUST, "spec 4.7", "scope hints are whole", "every auth.scope_hints entry has changes and personal_data", "give each scope hint both changes (none, reversible or irreversible) and personal_data (true or false)"},
	{RuleOAuthClientMetadata, MUST, "spec 4.1", "client metadata is fetched", "the Company fetches the client_id URL and its jwks_uri without redirects", "fetch the client metadata from the client_id URL (developer mode: trust Poppydesk's CA)"},

	{RuleOpsUndeclared, MUST, "Operations 2", "operations only when declared", "a request without Poppy-Extensions \"operations\";v=\"2\" gets no operation", "answer requests that did not declare the extension as if it did not exist (an error or a web alternative)"},
	{RuleOpsSummaryFormat, MUST, "Operations 3", "summary formatting", "the summary uses only the allowed Markdown: no links, images, raw HTML, bidi controls; within the length limit", "write the summary as plain sentences with *emphasis* at most"},
	{RuleOpsTermsMatch, MUST, "Operations 5", "terms match the request", "terms say what the request and the summary say", "build terms from the request being approved"},
	{RuleOpsRevisionOnRetry, MUST, "Operations 6, 7", "an approved retry is performed", "a request with a valid approval for the latest revision is performed, not answered with a new revision", "perform an approved operation unless its terms changed"},
	{RuleOpsInProgress, NOTE, "Operations 7", "in-progress answers", "an approved request is performed promptly", "none needed; Personal Agents retry with the same approval"},
	{RuleOpsLostResponse, NOTE, "Operations 7", "responses arrive", "the response to a performed operation reaches the Personal Agent", "none needed; the retry gets the first response"},
	{RuleOpsReusedRevision, MUST, "Operations 3", "a revision names one set of terms", "new terms get a new revision", "increase revision whenever the terms change"},
	{RuleOpsAtMostOnce, MUST, "Operations 7", "at most once", "an approval sent twice performs once, and the second response says the same", "store the outcome by operation and revision, and answer a retry with it"},
	{RuleOpsApprovalMembers, MUST, "Operations 6", "unknown Poppy-Approval members are ignored", "an approval with a member besides operation_id and revision is handled as without it", "read operation_id and revision from the Dictionary and ignore its other members"},
	{RuleOpsRevisionOnChange, MUST, "Operations 3", "a changed request gets a new revision", "a request with other parameters gets other terms under a new revision", "derive the revision from the terms"},
	{RuleOpsOtherAction, MUST, "Operations 3", "another action gets another operation", "a request for another action gets an operation_id of its own", "key operation_id by the action the request asks for (the order and item, say) and never give one to another action"},

	{RuleDestinationsDescribed, MUST, "spec 5.2", "Session destinations are the described request URLs", "an OpenAPI description's servers and paths name only the API's own request URLs", "serve the description's servers and paths for the API only, not the origin's root or the protocol's documents"},
	{RuleDescriptionAtRoot, NOTE, "spec 5.2", "a description at the origin's root", "an OpenAPI description is served below the API it describes, not at the origin's root", "none needed; Personal Agents take Session destinations from the description's servers and paths, never from where it is served, but serving it under the API's own path keeps careless clients from signing every URL of the origin"},
	{RuleOAuthNoScope, NOTE, "spec 4.7", "a sign-in grants a scope", "a token response grants at least one requested scope", "answer access_denied when the user grants nothing"},
	{RuleMCPResourceMetadata, MUST, "spec 7", "an MCP server's protected resource metadata", "resource equals the mcp entry's url and authorization_servers lists the Company's issuer", "serve RFC 9728 metadata at /.well-known/oauth-protected-resource{path} with resource = the url in poppy.json and the issuer in authorization_servers"},
	{RuleMCPTokenElsewhere, MUST, "spec 7", "an MCP server's token works only there", "an access token issued with resource = the MCP server's url is refused by every other API", "check each access token's resource (audience) at every API, and accept a token for the MCP server's url only at that server"},
	{RuleAnswersInTime, SHOULD, "spec 3", "documents and tokens are answered promptly", "discovery, metadata and token requests answer within seconds", "answer discovery and token requests without waiting on slow work"},
	{RuleSkillDigest, MUST, "spec 9.4", "a skill matches its digest", "the artifact's SHA-256 equals the index's digest", "publish the digest of the artifact as it is served"},
	{RuleSkillArchive, MUST, "spec 9.4", "a skill archive stays in its folder", "no absolute path, no .., no links", "build the archive with relative paths inside one folder"},
	{RuleAlternativeReference, MUST, "spec 9.2", "an alternative names what poppy.json lists", "openapi and mcp references name a listed API and its operation or tool", "reference only APIs listed in poppy.json"},
	{RuleAlternativeContent, MUST, "spec 9.2", "an alternative says what to do", "every alternative has instructions or references", "give each alternative instructions, references, or both"},
	{RuleFeedbackAlternative, NOTE, "spec 9.3", "feedback answered with an alternative", "202, or 200 with a valid alternative", "none needed when the alternative is valid"},
	{RuleFeedbackRateLimit, NOTE, "spec 9.3, 5.6", "feedback rate-limited", "reports are accepted, or 429 with Retry-After", "none needed; Personal Agents wait"},

	{RuleJoinPageHeaders, MUST, "spec 6", "browser-session page headers", "Cache-Control: no-store, Content-Security-Policy: frame-ancestors 'none', Cross-Origin-Opener-Policy: same-origin", "send the three headers on the browser-session page"},
	{RuleJoinCodeExpired, MUST, "spec 6", "a fresh one-time code", "the page gives a code that is valid for the join", "issue a new code on every page load"},
	{RuleJoinCodeUsed, MUST, "spec 6", "one-time codes are accepted once", "a code authorized by the Personal Agent is accepted once from its browser", "mark a code used only when it is submitted"},
	{RuleJoinOtherBrowser, MUST, "spec 6", "the code belongs to its browser", "the page's cookie binds the code it shows", "set the join cookie for the code on the same page load"},
	{RuleJoinCookie, MUST, "spec 6", "the join cookie", "the page sets the cookie that ties the code to the browser", "set the join cookie on the browser-session page"},
	{RuleJoinOnlyCookie, MUST, "spec 6", "no Session cookie before step 3", "the browser-session page sets only the join cookie, and authorize sets none", "set the Session cookie only in the answer to the browser's submission of its code"},
	{RuleJoinTokenRefused, MUST, "spec 6, 7", "authorize accepts the access token", "{browser_session_endpoint}/authorize accepts the Session's valid access token", "accept the same access tokens the APIs accept"},

	{RuleConvRetrySameID, MUST, "spec 8.3", "a retried message gets the original response", "a message sent again with the same ID is not handled twice and gets the first response", "store the response by message ID and return it for a retry"},
	{RuleConvDuplicateEvents, NOTE, "spec 8.5, 8.6", "events after Last-Event-ID", "a stream resumed with Last-Event-ID sends only later events", "none needed (spec 8.5: a read after a reconnect can return events again, and Personal Agents skip event IDs they handled); resuming strictly after the given ID saves the resend"},
	{RuleConvStreamCut, NOTE, "spec 8.6", "streams end cleanly", "a stream stays open until the reply is done", "none needed if intended; the Personal Agent resumes with Last-Event-ID"},
	{RuleConvCursorExpired, NOTE, "spec 8.5", "cursors stay valid", "a cursor just given is accepted", "keep cursors valid for at least the guides' suggested time"},
	{RuleConvUnknownValues, NOTE, "spec 8.5", "unknown event types and values", "events use types and values of the version in use", "none needed; Personal Agents ignore unknown values"},
	{RuleConvSlowStream, NOTE, "spec 8.6", "stream pace", "text deltas arrive promptly", "none needed if intended"},
	{RuleConvFields, MUST, "spec 8.5, 8.7", "conversation responses carry their fields", "every read has conversation_id, events, cursor, has_more, status and responder; every POST answer status and responder; every Company message author.type agent or human", "add the missing fields; a Personal Agent must not guess them"},
	{RuleConvOwner, MUST, "spec 8.2", "a conversation belongs to its owner", "a read of the conversation by another User of the same Personal Agent, or a Direct Conversation started under it, gets HTTP 404 conversation_not_found", "check the client_id and User ID (and the account) of every request on a conversation before anything else"},
	{RuleConvUserRequested, MUST, "spec 8.10", "user_requested_event_id names a user_requested event", "a start naming an event the parent does not have as user_requested gets HTTP 400 invalid_request", "look the event up in the parent conversation and refuse one that is not a user_requested event"},
	{RuleConvNoSSE, SHOULD, "spec 8.6", "streaming", "a read asking for text/event-stream is answered as a stream", "serve text/event-stream when the Accept header asks for it"},
}

var ruleIndex = func() map[string]Rule {
	m := make(map[string]Rule, len(catalog))
	for _, r := range catalog {
		m[r.ID] = r
	}
	return m
}()

// checkRules maps discovery's checks to rules.
var checkRules = map[string]string{
	discovery.CheckDomain:              RuleDiscoveryFetch,
	discovery.CheckFetch:               RuleDiscoveryFetch,
	discovery.CheckFinalURL:            RuleDiscoveryFinalURL,
	discovery.CheckParse:               RuleDiscoveryFields,
	discovery.CheckHTTPS:               RuleDiscoveryHTTPS,
	discovery.CheckOrganizationDomain:  RuleDiscoveryDomain,
	discovery.CheckVersion:             RuleDiscoveryVersion,
	discovery.CheckVersionDocument:     RuleDiscoveryVersionDoc,
	discovery.CheckResourceMetadata:    RuleDiscoveryResourceMeta,
	discovery.CheckIssuerSelection:     RuleDiscoveryIssuerSelect,
	discovery.CheckKnownIssuer:         RuleDiscoveryKnownIssuer,
	discovery.CheckASMetadata:          RuleDiscoveryASMetadata,
	discovery.CheckIssuerMatch:         RuleDiscoveryIssuerMatch,
	discovery.CheckProtectedResources:  RuleDiscoveryProtectedRes,
	discovery.CheckSignInConfiguration: RuleDiscoverySignInConfig,
}

// RuleOfCheck is the rule of a discovery check ("" when none).
func RuleOfCheck(check string) string { return checkRules[check] }
