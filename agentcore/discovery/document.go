package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/headers"
)

// Document is a parsed poppy.json (spec 3.1). Unknown fields are ignored (spec 3.3).
type Document struct {
	ProtocolVersion   string                      `json:"protocol_version"`
	SupportedVersions map[string]string           `json:"supported_versions,omitempty"`
	Organization      Organization                `json:"organization"`
	Auth              *Auth                       `json:"auth,omitempty"`
	Agent             *Agent                      `json:"agent,omitempty"`
	APIs              []API                       `json:"apis,omitempty"`
	Web               *Web                        `json:"web,omitempty"`
	Feedback          *Feedback                   `json:"feedback,omitempty"`
	ExcludedTasks     *ExcludedTasks              `json:"excluded_tasks,omitempty"`
	Extensions        map[string][]ExtensionEntry `json:"extensions,omitempty"`
	SkillIndex        json.RawMessage             `json:"skill_index,omitempty"`
	// hasSupportedVersions is true when the field was present at all (spec 3.4 checks its absence).
	hasSupportedVersions bool
}

// Organization is poppy.json's organization (spec 3.1).
type Organization struct {
	Name    string `json:"name"`
	Domain  string `json:"domain"`
	LogoURI string `json:"logo_uri,omitempty"`
}

// Auth is poppy.json's auth (spec 3.1, 4.7).
type Auth struct {
	Issuer     string               `json:"issuer,omitempty"`
	Disabled   bool                 `json:"disabled,omitempty"`
	Scopes     map[string]string    `json:"scopes,omitempty"`
	ScopeHints map[string]ScopeHint `json:"scope_hints,omitempty"`
}

// ScopeHint is one auth.scope_hints entry (spec 4.7). An unrecognised or missing changes value
// is treated as "irreversible"; a missing personal_data stays nil (unknown), never false, and
// the Inspector shows the entry as a finding (agentcore/inspect's ScopeHintProblems).
type ScopeHint struct {
	Changes      string `json:"changes"`
	PersonalData *bool  `json:"personal_data"`
}

// Agent is poppy.json's agent (spec 3.1, 8).
type Agent struct {
	Protocols []Protocol `json:"protocols"`
}

// Protocol is one conversation protocol of the Company Agent.
type Protocol struct {
	Type     string `json:"type"`
	Endpoint string `json:"endpoint"`
	// Access is "session" (default) or "signed_in"; unknown values are treated as absent (3.2).
	Access string `json:"access,omitempty"`
}

// API is one entry of apis (spec 3.1, 7).
type API struct {
	Type        string `json:"type"`
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
}

// Web is poppy.json's web (spec 3.1, 6).
type Web struct {
	BrowserSessionEndpoint string `json:"browser_session_endpoint,omitempty"`
}

// Feedback is poppy.json's feedback (spec 9.3).
type Feedback struct {
	Endpoint string `json:"endpoint"`
}

// ExcludedTasks is poppy.json's excluded_tasks (spec 9.1).
type ExcludedTasks struct {
	URL string `json:"url"`
}

// ExtensionEntry is one version entry of an extension (spec 3.3): its major version and the other
// fields the extension defines for it.
type ExtensionEntry struct {
	Version string                     `json:"version"`
	Fields  map[string]json.RawMessage `json:"fields,omitempty"`
}

// Endpoint returns the entry's "endpoint" field when it is a string.
func (e ExtensionEntry) Endpoint() string {
	var s string
	if raw, ok := e.Fields["endpoint"]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// ParseDocument parses and validates a poppy.json body (spec 3.1): required fields, HTTPS URLs,
// at least one channel. It does not check organization.domain against the serving host or the
// version; Discover does. Errors are *CheckError.
func ParseDocument(body []byte) (*Document, error) {
	var raw struct {
		ProtocolVersion   json.RawMessage            `json:"protocol_version"`
		SupportedVersions json.RawMessage            `json:"supported_versions"`
		Organization      *Organization              `json:"organization"`
		Auth              *Auth                      `json:"auth"`
		Agent             *Agent                     `json:"agent"`
		APIs              []API                      `json:"apis"`
		Web               *Web                       `json:"web"`
		Feedback          *Feedback                  `json:"feedback"`
		ExcludedTasks     *ExcludedTasks             `json:"excluded_tasks"`
		Extensions        map[string]json.RawMessage `json:"extensions"`
		SkillIndex        json.RawMessage            `json:"skill_index"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return nil, &CheckError{Check: CheckParse, Section: "3.1", Detail: "poppy.json is not a valid JSON object with the fields of spec 3.1: " + err.Error()}
	}
	if dec.More() {
		return nil, &CheckError{Check: CheckParse, Section: "3.1", Detail: "poppy.json has data after its JSON object"}
	}
	d := &Document{Auth: raw.Auth, Agent: raw.Agent, APIs: raw.APIs, Web: raw.Web, Feedback: raw.Feedback, ExcludedTasks: raw.ExcludedTasks, SkillIndex: raw.SkillIndex}
	if err := json.Unmarshal(raw.ProtocolVersion, &d.ProtocolVersion); err != nil || d.ProtocolVersion == "" {
		return nil, &CheckError{Check: CheckParse, Section: "3.1", Detail: `protocol_version is required, as a "major.minor" string such as "0.4"`}
	}
	if _, _, ok := headers.ParseVersion(d.ProtocolVersion); !ok {
		return nil, &CheckError{Check: CheckParse, Section: "3.1", Detail: fmt.Sprintf("protocol_version %q is not major.minor (e.g. \"0.4\")", d.ProtocolVersion)}
	}
	if len(raw.SupportedVersions) > 0 && string(raw.SupportedVersions) != "null" {
		d.hasSupportedVersions = true
		if err := json.Unmarshal(raw.SupportedVersions, &d.SupportedVersions); err != nil {
			return nil, &CheckError{Check: CheckParse, Section: "3.4", Detail: "supported_versions must map each version to the URL of its document: " + err.Error()}
		}
	}
	if raw.Organization == nil || strings.TrimSpace(raw.Organization.Name) == "" || raw.Organization.Domain == "" {
		return nil, &CheckError{Check: CheckParse, Section: "3.1", Detail: "organization with a name and a domain is required"}
	}
	d.Organization = *raw.Organization
	if d.Agent == nil && len(d.APIs) == 0 && d.Web == nil {
		return nil, &CheckError{Check: CheckParse, Section: "3.1", Detail: "poppy.json must list at least one of agent, apis or web"}
	}
	for name, rawEntries := range raw.Extensions {
		var entries []json.RawMessage
		if json.Unmarshal(rawEntries, &entries) != nil {
			continue // malformed extension lists are ignored like unknown ones (spec 3.3)
		}
		for _, re := range entries {
			var fields map[string]json.RawMessage
			if json.Unmarshal(re, &fields) != nil {
				continue
			}
			var v string
			if json.Unmarshal(fields["version"], &v) != nil || v == "" {
				continue
			}
			delete(fields, "version")
			if d.Extensions == nil {
				d.Extensions = map[string][]ExtensionEntry{}
			}
			d.Extensions[name] = append(d.Extensions[name], ExtensionEntry{Version: v, Fields: fields})
		}
	}
	if err := d.checkURLs(); err != nil {
		return nil, err
	}
	return d, nil
}

// checkURLs enforces spec 3 "HTTPS" on every URL the document gives.
func (d *Document) checkURLs() error {
	check := func(field, v string) error {
		if v == "" {
			return nil
		}
		u, err := url.Parse(v)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			return &CheckError{Check: CheckHTTPS, Section: "3", Detail: fmt.Sprintf("%s is %q; every URL in poppy.json must be an absolute HTTPS URL", field, v)}
		}
		return nil
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(check("organization.logo_uri", d.Organization.LogoURI))
	for v, u := range d.SupportedVersions {
		add(check("supported_versions."+v, u))
	}
	if d.Auth != nil {
		add(check("auth.issuer", d.Auth.Issuer))
	}
	if d.Agent != nil {
		for i, p := range d.Agent.Protocols {
			if p.Endpoint == "" {
				errs = append(errs, &CheckError{Check: CheckParse, Section: "3.1", Detail: fmt.Sprintf("agent.protocols[%d] has no endpoint", i)})
			}
			add(check(fmt.Sprintf("agent.protocols[%d].endpoint", i), p.Endpoint))
		}
	}
	for i, a := range d.APIs {
		if a.URL == "" || a.Type == "" {
			errs = append(errs, &CheckError{Check: CheckParse, Section: "3.1", Detail: fmt.Sprintf("apis[%d] needs a type and a url", i)})
		}
		add(check(fmt.Sprintf("apis[%d].url", i), a.URL))
	}
	if d.Web != nil {
		add(check("web.browser_session_endpoint", d.Web.BrowserSessionEndpoint))
	}
	if d.Feedback != nil {
		add(check("feedback.endpoint", d.Feedback.Endpoint))
	}
	if d.ExcludedTasks != nil {
		add(check("excluded_tasks.url", d.ExcludedTasks.URL))
	}
	for name, es := range d.Extensions {
		for _, e := range es {
			for k, raw := range e.Fields {
				var s string
				if json.Unmarshal(raw, &s) == nil && strings.Contains(s, "://") {
					add(check(fmt.Sprintf("extensions[%q] version %s %s", name, e.Version, k), s))
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// Compatible reports whether versions a and b are compatible (spec 3.4): same major and, before
// 1.0, the same minor (agentcore/headers reads the versions).
func Compatible(a, b string) bool { return headers.Compatible(a, b) }
