package conformance

// The reference Company's faults (agentcore/poppytest) and the rule a run of this package
// reports failed for each. The table test runs every probed fault and fails for a fault of
// poppytest.AllFaults that is missing here, so a new fault needs its check.

import "github.com/poppydesk/poppydesk/agentcore/inspect"

// FaultRule is the rule a fault breaks, and whether Run probes it yet.
type FaultRule struct {
	Rule   string
	Probed bool
}

// FaultRules maps each fault of the reference Company to its rule.
var FaultRules = map[string]FaultRule{
	"redirect-other-path":       {inspect.RuleDiscoveryFinalURL, true},
	"domain-mismatch":           {inspect.RuleDiscoveryDomain, true},
	"issuer-not-listing-domain": {inspect.RuleDiscoveryProtectedRes, true},
	"issuer-mismatch":           {inspect.RuleDiscoveryIssuerMatch, true},
	"version-mismatch":          {inspect.RuleDiscoveryVersion, true},
	"session-ended":             {inspect.RuleSessionEndedFresh, true},
	"version-unsupported":       {inspect.RuleVersionListedRefused, true},
	"429-burst":                 {inspect.RuleRateLimited, true},
	"redirect-protected":        {inspect.RuleRedirectCredentials, true},

	// Faults that act after sign-in, in operations, joins or conversations: their rules are in
	// the catalog and the Inspector reports what the engine sees; Run does not probe them yet.
	"resource-dpop-nonce":             {inspect.RuleResourceDPoPNonce, false},
	"iss-missing":                     {inspect.RuleOAuthIss, false},
	"iss-wrong":                       {inspect.RuleOAuthIssWrong, false},
	"scope-wider":                     {inspect.RuleOAuthScopeWider, false},
	"device-foreign-host":             {inspect.RuleOAuthDeviceHost, false},
	"refresh-rotation":                {inspect.RuleOAuthRefreshRevoked, false},
	"refresh-no-rotation":             {inspect.RuleOAuthNoRotation, false},
	"dpop-nonce":                      {inspect.RuleOAuthDPoPNonce, false},
	"device-slow-down":                {inspect.RuleOAuthSlowDown, false},
	"summary-hostile":                 {inspect.RuleOpsSummaryFormat, false},
	"terms-mismatch":                  {inspect.RuleOpsTermsMatch, false},
	"new-revision-on-retry":           {inspect.RuleOpsRevisionOnRetry, false},
	"in-progress-503":                 {inspect.RuleOpsInProgress, false},
	"lose-response-after-perform":     {inspect.RuleOpsLostResponse, false},
	"reused-revision":                 {inspect.RuleOpsReusedRevision, false},
	"join-code-expired":               {inspect.RuleJoinCodeExpired, false},
	"join-code-used":                  {inspect.RuleJoinCodeUsed, false},
	"join-code-other-browser":         {inspect.RuleJoinOtherBrowser, false},
	"join-cookie-missing":             {inspect.RuleJoinCookie, false},
	"join-token-refused":              {inspect.RuleJoinTokenRefused, false},
	"agent-duplicate-events":          {inspect.RuleConvDuplicateEvents, false},
	"agent-stream-cut":                {inspect.RuleConvStreamCut, false},
	"agent-cursor-expired":            {inspect.RuleConvCursorExpired, false},
	"agent-unknown-values":            {inspect.RuleConvUnknownValues, false},
	"agent-slow-stream":               {inspect.RuleConvSlowStream, false},
	"agent-no-sse":                    {inspect.RuleConvNoSSE, false},
	"skill-digest-mismatch":           {inspect.RuleSkillDigest, false},
	"skill-archive-escape":            {inspect.RuleSkillArchive, false},
	"alternative-unlisted-api":        {inspect.RuleAlternativeReference, false},
	"feedback-alternative":            {inspect.RuleFeedbackAlternative, false},
	"feedback-429":                    {inspect.RuleFeedbackRateLimit, false},
	"description-at-root":             {inspect.RuleDestinationsDescribed, false},
	"description-lists-protocol-urls": {inspect.RuleDestinationsDescribed, false},
	"operations-unlisted":             {inspect.RuleOpsUndeclared, false},
	"operations-other-version":        {inspect.RuleOpsUndeclared, false},
	"scope-none":                      {inspect.RuleOAuthNoScope, false},
	"hang-discovery":                  {inspect.RuleAnswersInTime, false},
	"hang-token":                      {inspect.RuleAnswersInTime, false},
}
