package conformance

// The reference Company's faults (agentcore/refcompany.AllFaults: its own and its Company
// Agent's) and the rule a run reports for each: failed when the fault breaks a rule of level
// MUST or SHOULD, noted when it is behaviour the specification allows and a Personal Agent
// copes with (level NOTE). The table test runs every fault, with every action allowed, and
// fails for a fault that is missing here or that no probe reports, so a new fault needs its
// check.

import "github.com/poppydesk/poppydesk/agentcore/inspect"

// FaultRule is the rule a fault breaks and why it has that level.
type FaultRule struct {
	Rule string
	// Why says what the fault does to the rule, and for a NOTE why it is no failure.
	Why string
}

// FaultRules maps each fault of the reference Company to its rule.
var FaultRules = map[string]FaultRule{
	// Discovery and Sessions (spec 3, 3.2, 3.4, 5.5, 5.6).
	"redirect-other-path":       {inspect.RuleDiscoveryFinalURL, "MUST: poppy.json's final URL must be /.well-known/poppy.json"},
	"domain-mismatch":           {inspect.RuleDiscoveryDomain, "MUST: organization.domain must be the host that served poppy.json"},
	"issuer-not-listing-domain": {inspect.RuleDiscoveryProtectedRes, "MUST: the issuer must list the domain in protected_resources"},
	"issuer-mismatch":           {inspect.RuleDiscoveryIssuerMatch, "MUST: the metadata's issuer must equal the issuer URL"},
	"version-mismatch":          {inspect.RuleDiscoveryVersion, "MUST: a version compatible with 0.4 must be served"},
	"session-ended":             {inspect.RuleSessionEndedFresh, "SHOULD: a Company ends Sessions it chose to end, not every new one"},
	"version-unsupported":       {inspect.RuleVersionListedRefused, "MUST: the version poppy.json serves must be accepted"},
	"429-burst":                 {inspect.RuleRateLimited, "NOTE: rate limits are allowed (spec 5.6); the run waits Retry-After and sends again"},
	"redirect-protected":        {inspect.RuleRedirectCredentials, "MUST: credentialed requests are never redirected (spec 3)"},
	"resource-dpop-nonce":       {inspect.RuleResourceDPoPNonce, "NOTE: a server nonce is allowed (RFC 9449 §9); it costs one round trip per nonce"},

	// The authorization server (spec 4).
	"iss-missing":         {inspect.RuleOAuthIss, "MUST: every authorization response carries iss (RFC 9207, spec 4.2); the run sees it on an error redirect and on the sign-in"},
	"iss-wrong":           {inspect.RuleOAuthIssWrong, "MUST: iss equals the issuer"},
	"scope-wider":         {inspect.RuleOAuthScopeWider, "MUST: no scope beyond those requested (spec 4.7)"},
	"device-foreign-host": {inspect.RuleOAuthDeviceHost, "MUST: the device link is on the issuer's or a protected resource's host (spec 4.3)"},
	"refresh-rotation":    {inspect.RuleOAuthRefreshRevoked, "NOTE: a Company may revoke refresh tokens (sign-out, reuse detection); the Personal Agent continues signed out"},
	"refresh-no-rotation": {inspect.RuleOAuthNoRotation, "NOTE: rotation is recommended, not required (RFC 6749 §6); the old token keeps working"},
	"dpop-nonce":          {inspect.RuleOAuthDPoPNonce, "NOTE: a token endpoint nonce is allowed (RFC 9449 §8)"},
	"device-slow-down":    {inspect.RuleOAuthSlowDown, "NOTE: slow_down is part of RFC 8628 §3.5; answering it to a poll at the interval only makes the User wait"},
	"scope-none":          {inspect.RuleOAuthNoScope, "NOTE: a sign-in that grants no scope ends as a decline (spec 4.7); nothing breaks, the User gets nothing"},

	// The Operations extension v2.
	"summary-hostile":             {inspect.RuleOpsSummaryFormat, "MUST: a summary uses only paragraphs, lists and emphasis (Operations 3)"},
	"terms-mismatch":              {inspect.RuleOpsTermsMatch, "MUST: terms say what the summary and the request say (Operations 3, 5)"},
	"new-revision-on-retry":       {inspect.RuleOpsRevisionOnRetry, "MUST: a valid approval of the latest revision is performed (Operations 6, 7)"},
	"in-progress-503":             {inspect.RuleOpsInProgress, "NOTE: 503 with Retry-After while performing is what Operations 7 prescribes; the run retries with the same approval"},
	"lose-response-after-perform": {inspect.RuleOpsLostResponse, "NOTE: a lost response is a network event; the retry with the same approval gets the first response (Operations 7)"},
	"reused-revision":             {inspect.RuleOpsReusedRevision, "MUST: two sets of terms never share a revision (Operations 3)"},
	"operations-unlisted":         {inspect.RuleOpsUndeclared, "MUST: no operation to a request that does not declare the extension (Operations 2)"},
	"operations-other-version":    {inspect.RuleOpsUndeclared, "MUST: another major version is no declaration (Operations 2)"},

	// Browser sessions (spec 6).
	"join-code-expired":       {inspect.RuleJoinCodeExpired, "MUST: the page gives a code valid for its join"},
	"join-code-used":          {inspect.RuleJoinCodeUsed, "MUST: an authorized code is accepted once, from its browser"},
	"join-code-other-browser": {inspect.RuleJoinOtherBrowser, "MUST: the page's cookie binds the code it shows"},
	"join-cookie-missing":     {inspect.RuleJoinCookie, "MUST: the page sets the cookie that ties the code to the browser"},
	"join-token-refused":      {inspect.RuleJoinTokenRefused, "MUST: authorize accepts the access tokens the APIs accept (spec 6 step 2, 7)"},
	"join-page-headers":       {inspect.RuleJoinPageHeaders, "MUST: the page is not cached, framed or kept by its opener (spec 6 step 1)"},

	// Task coverage (spec 9).
	"skill-digest-mismatch":    {inspect.RuleSkillDigest, "MUST: an artifact matches its digest (spec 9.4)"},
	"skill-archive-escape":     {inspect.RuleSkillArchive, "MUST: the archive safety checks pass (spec 9.4)"},
	"alternative-unlisted-api": {inspect.RuleAlternativeReference, "MUST: openapi and mcp references name a listed API (spec 9.2)"},
	"feedback-alternative":     {inspect.RuleFeedbackAlternative, "NOTE: 200 with an alternative is allowed (spec 9.3); Personal Agents accept either answer"},
	"feedback-429":             {inspect.RuleFeedbackRateLimit, "NOTE: rate limits follow spec 5.6; a report waits"},

	// Session destinations and bounded waits (spec 5.2, 3).
	"description-lists-protocol-urls": {inspect.RuleDestinationsDescribed, "MUST: a description lists only its API's request URLs (spec 5.2)"},
	"description-at-root":             {inspect.RuleDescriptionAtRoot, "NOTE: a description may be served anywhere; Session destinations come from its servers and paths, so serving it at the origin's root breaks nothing a correct Personal Agent does"},
	"hang-discovery":                  {inspect.RuleAnswersInTime, "SHOULD: discovery documents answer within seconds; the run gives up after --timeout"},
	"hang-token":                      {inspect.RuleAnswersInTime, "SHOULD: the token endpoint answers within seconds; the run gives up after --timeout and asks it nothing more"},

	// The Company Agent (spec 8).
	"agent-duplicate-events": {inspect.RuleConvDuplicateEvents, "NOTE: spec 8.5 says a read after a reconnect can return events again; Personal Agents skip event IDs they handled"},
	"agent-stream-cut":       {inspect.RuleConvStreamCut, "NOTE: a Company MAY close a stream at any time (spec 8.6); the Personal Agent reconnects"},
	"agent-cursor-expired":   {inspect.RuleConvCursorExpired, "NOTE: a Company keeps events as long as it chooses (spec 8.5); cursor_expired makes the Personal Agent read from the start"},
	"agent-unknown-values":   {inspect.RuleConvUnknownValues, "NOTE: later versions add types and values (spec 8.5, 8.7); Personal Agents skip them"},
	"agent-slow-stream":      {inspect.RuleConvSlowStream, "NOTE: the pace of a reply is the Company's"},
	"agent-no-sse":           {inspect.RuleConvNoSSE, "SHOULD: streaming is optional (spec 8.6: a Company that doesn't stream returns JSON), but a read that asks for a stream should get one"},

	// A Company that accepts what it must refuse, or does not keep what it must keep.
	"poppy-json-missing":               {inspect.RuleDiscoveryFetch, "MUST: poppy.json is published at /.well-known/poppy.json (spec 3)"},
	"session-iat-unchecked":            {inspect.RuleSessionVerify, "MUST: a Session JWT whose iat is outside the window gets invalid_session (spec 5.3)"},
	"version-unchecked":                {inspect.RuleVersionChecked, "MUST: a request without a compatible Poppy-Version gets version_unsupported (spec 3.4)"},
	"client-metadata-unfetched":        {inspect.RuleOAuthClientMetadata, "MUST: the Company fetches the client metadata at the client_id URL (spec 4.1)"},
	"assertion-aud-loose":              {inspect.RuleOAuthAssertionAud, "MUST: a client assertion's aud is the issuer as one string, exactly (spec 4.1, 10.4)"},
	"pkce-optional":                    {inspect.RuleOAuthPKCE, "MUST: an authorization request without PKCE is refused (spec 4.2)"},
	"redirect-uri-loose":               {inspect.RuleOAuthRedirectExact, "MUST: redirect_uri is one the client registered, exactly (spec 4.2)"},
	"operation-ignores-change":         {inspect.RuleOpsRevisionOnChange, "MUST: other terms get a new revision (Operations 3)"},
	"operation-id-shared":              {inspect.RuleOpsOtherAction, "MUST: an operation_id is never used for another action (Operations 3)"},
	"approval-performs-again":          {inspect.RuleOpsAtMostOnce, "MUST: an approval performs its operation at most once (Operations 7)"},
	"agent-missing-fields":             {inspect.RuleConvFields, "MUST: reads carry has_more and Company messages author.type (spec 8.5, 8.7)"},
	"agent-retry-new-conversation":     {inspect.RuleConvRetrySameID, "MUST: a message sent again with the same ID gets the original response (spec 8.3)"},
	"organization-name-missing":        {inspect.RuleDiscoveryFields, "MUST: poppy.json has every required field (spec 3.1)"},
	"feedback-http-url":                {inspect.RuleDiscoveryHTTPS, "MUST: every URL in poppy.json is HTTPS (spec 3)"},
	"as-metadata-no-revocation":        {inspect.RuleDiscoveryASMetadata, "MUST: the metadata has revocation_endpoint (spec 3.2)"},
	"resource-metadata-wrong-resource": {inspect.RuleDiscoveryResourceMeta, "MUST: resource is exactly https://{organization.domain} (spec 3.2)"},
	"auth-issuer-unlisted":             {inspect.RuleDiscoveryIssuerSelect, "MUST: auth.issuer names the listed authorization server (spec 3.1)"},
	"sign-in-without-issuer":           {inspect.RuleDiscoverySignInConfig, "MUST: a Company that lists signed_in access has an issuer (spec 3.2)"},
	"version-document-redirect":        {inspect.RuleDiscoveryVersionDoc, "MUST: a supported_versions document is served without redirects (spec 3.4)"},

	// A Company that refuses what it must accept, or keys its state too loosely.
	"session-key-pinned":              {inspect.RuleSessionNewKey, "MUST: a new delegated key in a known Session is accepted (spec 5.2)"},
	"session-sid-any-user":            {inspect.RuleSessionSidOwner, "MUST: a known sid with another User ID gets invalid_session (spec 5.3)"},
	"unknown-extension-refused":       {inspect.RuleUnknownIgnored, "MUST: an extension the Company does not know is ignored (spec 3.3)"},
	"mcp-metadata-wrong-resource":     {inspect.RuleMCPResourceMetadata, "MUST: the MCP server's metadata names its url as resource (spec 7)"},
	"mcp-metadata-other-issuer":       {inspect.RuleMCPResourceMetadata, "MUST: the MCP server's metadata lists the Company's issuer (spec 7)"},
	"version-document-other-domain":   {inspect.RuleDiscoveryVersionsAgree, "MUST: every served version's document names the same organization.domain (spec 3.4)"},
	"scope-hint-partial":              {inspect.RuleScopeHints, "MUST: each scope hint has changes and personal_data (spec 4.7)"},
	"join-page-sets-session":          {inspect.RuleJoinOnlyCookie, "MUST: the page sets only the join cookie; the Session cookie comes in step 3 (spec 6)"},
	"approval-unknown-member-refused": {inspect.RuleOpsApprovalMembers, "MUST: a member of Poppy-Approval the Company does not know is ignored (Operations 6)"},
	"device-link-approves":            {inspect.RuleOAuthDeviceLink, "MUST: opening verification_uri_complete approves nothing (spec 4.3)"},
	"alternative-empty":               {inspect.RuleAlternativeContent, "MUST: an alternative has instructions or references (spec 9.2)"},
	"agent-conversation-any-user":     {inspect.RuleConvOwner, "MUST: another User of the same Personal Agent gets conversation_not_found (spec 8.2, 8.10)"},
	"agent-user-requested-unchecked":  {inspect.RuleConvUserRequested, "MUST: a user_requested_event_id that names no user_requested event gets invalid_request (spec 8.10)"},
	"cookie-required":                 {inspect.RuleNoCookies, "MUST: the Session header and access token are accepted without cookies (spec 5.6)"},

	// A Company that accepts what it must refuse (spec 3, 5.6, 7).
	"htu-any-scheme":     {inspect.RuleHTTPSOnly, "MUST: a Session JWT whose htu is the http:// form of the request URL is rejected (spec 3)"},
	"token-in-query":     {inspect.RuleTokenInURL, "MUST: an access token in the URL's query is not accepted (spec 5.6)"},
	"token-any-resource": {inspect.RuleMCPTokenElsewhere, "MUST: a token issued for the MCP server's url is rejected at other APIs (spec 7)"},
}

// Rules lists every rule a run reports: the discovery checks a single run can see (not
// discovery.known-issuer, which needs an earlier discovery of the same domain) and the rules of
// the probes. Each has a fault of the reference Company in FaultRules that makes a run fail it
// (TestEveryRuleFails), and docs/CONFORMANCE.md names the spec sentences each probes.
func Rules() []string {
	return []string{
		inspect.RuleDiscoveryFetch, inspect.RuleDiscoveryFinalURL, inspect.RuleDiscoveryFields, inspect.RuleDiscoveryHTTPS,
		inspect.RuleDiscoveryDomain, inspect.RuleDiscoveryVersion, inspect.RuleDiscoveryVersionDoc, inspect.RuleDiscoveryResourceMeta,
		inspect.RuleDiscoveryIssuerSelect, inspect.RuleDiscoveryASMetadata, inspect.RuleDiscoveryIssuerMatch,
		inspect.RuleDiscoveryProtectedRes, inspect.RuleDiscoverySignInConfig, inspect.RuleDiscoveryVersionsAgree,

		inspect.RuleSessionVerify, inspect.RuleSessionEndedFresh, inspect.RuleVersionChecked, inspect.RuleVersionListedRefused,
		inspect.RuleRateLimited, inspect.RuleRedirectCredentials, inspect.RuleResourceDPoPNonce, inspect.RuleDestinationsDescribed,
		inspect.RuleDescriptionAtRoot, inspect.RuleAnswersInTime, inspect.RuleSessionNewKey, inspect.RuleSessionSidOwner,
		inspect.RuleUnknownIgnored, inspect.RuleMCPResourceMetadata, inspect.RuleHTTPSOnly, inspect.RuleNoCookies,
		inspect.RuleTokenInURL, inspect.RuleMCPTokenElsewhere,

		inspect.RuleOAuthClientMetadata, inspect.RuleOAuthAssertionAud, inspect.RuleOAuthPKCE, inspect.RuleOAuthRedirectExact,
		inspect.RuleOAuthIss, inspect.RuleOAuthIssWrong, inspect.RuleOAuthScopeWider, inspect.RuleOAuthNoScope,
		inspect.RuleOAuthDeviceHost, inspect.RuleOAuthDeviceLink, inspect.RuleOAuthSlowDown, inspect.RuleOAuthDPoPNonce, inspect.RuleOAuthRefreshRevoked,
		inspect.RuleOAuthNoRotation, inspect.RuleScopeHints,

		inspect.RuleOpsUndeclared, inspect.RuleOpsSummaryFormat, inspect.RuleOpsTermsMatch, inspect.RuleOpsRevisionOnChange,
		inspect.RuleOpsReusedRevision, inspect.RuleOpsRevisionOnRetry, inspect.RuleOpsInProgress, inspect.RuleOpsLostResponse,
		inspect.RuleOpsAtMostOnce, inspect.RuleOpsApprovalMembers, inspect.RuleOpsOtherAction,

		inspect.RuleJoinPageHeaders, inspect.RuleJoinCookie, inspect.RuleJoinCodeExpired, inspect.RuleJoinOtherBrowser,
		inspect.RuleJoinCodeUsed, inspect.RuleJoinTokenRefused, inspect.RuleJoinOnlyCookie,

		inspect.RuleConvRetrySameID, inspect.RuleConvNoSSE, inspect.RuleConvStreamCut, inspect.RuleConvSlowStream,
		inspect.RuleConvCursorExpired, inspect.RuleConvDuplicateEvents, inspect.RuleConvUnknownValues, inspect.RuleConvFields,
		inspect.RuleConvOwner, inspect.RuleConvUserRequested,

		inspect.RuleSkillDigest, inspect.RuleSkillArchive, inspect.RuleAlternativeReference, inspect.RuleAlternativeContent,
		inspect.RuleFeedbackAlternative,
		inspect.RuleFeedbackRateLimit,
	}
}
