package oauth

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

func TestPKCES256Vector(t *testing.T) {
	// RFC 7636 Appendix B.
	if got := challengeS256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Fatalf("S256 challenge = %q", got)
	}
	v1, v2 := newVerifier(), newVerifier()
	if len(v1) != 43 || v1 == v2 {
		t.Fatalf("verifiers %q %q: want 43 characters and fresh each time", v1, v2)
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name         string
		needed, held []string
		want         []string
	}{
		{"first sign-in", []string{"orders:read"}, nil, []string{"orders:read"}},
		{"more later: the union, not only the missing", []string{"orders:write"}, []string{"orders:read"}, []string{"orders:read", "orders:write"}},
		{"duplicates and blanks", []string{"b", " ", "a", "b"}, []string{"a"}, []string{"a", "b"}},
	}
	for _, tc := range tests {
		if got := Plan(tc.needed, tc.held); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Plan = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func ptr(s string) *string { return &s }

func TestCheckGranted(t *testing.T) {
	req := []string{"orders:read", "orders:write"}
	tests := []struct {
		name      string
		requested []string
		scope     *string
		want      []string
		errHas    string
	}{
		{"absent: exactly what was requested", req, nil, req, ""},
		{"absent on a narrowed refresh: the narrowed set, not what was held", []string{"orders:read"}, nil, []string{"orders:read"}, ""},
		{"fewer", req, ptr("orders:read"), []string{"orders:read"}, ""},
		{"same, other order", req, ptr("orders:write orders:read"), req, ""},
		{"wider", []string{"orders:read"}, ptr("orders:read orders:write"), nil, "beyond those requested"},
		{"empty", req, ptr(""), nil, "at least one"},
		{"blank", req, ptr("   "), nil, "at least one"},
	}
	for _, tc := range tests {
		got, err := CheckGranted(tc.requested, tc.scope)
		if tc.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.errHas)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	yes, no := true, false
	co := &discovery.Company{Scopes: []discovery.Scope{
		{Name: "a", Description: "A", Changes: "none", PersonalData: &no},
		{Name: "b", Description: "B", Changes: "irreversible", PersonalData: &yes},
		{Name: "c", Description: "C"}, // described, no hints
	}}
	got := Describe(co, []string{"a", "b", "c", "d"}, []string{"a"})
	want := []ScopeInfo{
		{Name: "a", Description: "A", Changes: "none", PersonalData: false, Hinted: true, Held: true},
		{Name: "b", Description: "B", Changes: "irreversible", PersonalData: true, Hinted: true},
		{Name: "c", Description: "C", Changes: "irreversible", PersonalData: true},
		{Name: "d", Changes: "irreversible", PersonalData: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Describe = %+v\nwant %+v", got, want)
	}
}

// TestChoices: which scopes the sign-in screen lists and which boxes start ticked (spec 4.7,
// RFC 9700 §2.3).
func TestChoices(t *testing.T) {
	yes, no := true, false
	co := &discovery.Company{
		Scopes: []discovery.Scope{
			{Name: "orders:read", Description: "See your orders", Changes: "none", PersonalData: &yes},
			{Name: "orders:write", Description: "Change your orders", Changes: "reversible", PersonalData: &yes},
			{Name: "catalog:read", Description: "The catalog", Changes: "none", PersonalData: &no},
			{Name: "notes", Description: "described, no hints"},
		},
		AuthorizationServer: &discovery.ASMetadata{ScopesSupported: []string{"orders:read", "payments"}},
	}
	all := []string{"catalog:read", "notes", "orders:read", "orders:write", "payments"}
	for _, tc := range []struct {
		name             string
		co               *discovery.Company
		requested, held  []string
		names            []string // listed, in order
		checked, flagged []string // ticked; Requested set
	}{
		{"nothing requested or held: the hinted scopes that change nothing", co, nil, nil,
			all, []string{"catalog:read", "orders:read"}, nil},
		{"the model's request", co, []string{"orders:write"}, nil,
			all, []string{"orders:write"}, []string{"orders:write"}},
		{"held scopes are requested again", co, nil, []string{"orders:write"},
			all, []string{"orders:write"}, nil},
		{"requested and held", co, []string{"orders:read"}, []string{"payments"},
			all, []string{"orders:read", "payments"}, []string{"orders:read"}},
		{"a requested scope the Company does not describe is listed", co, []string{"gift:cards"}, nil,
			[]string{"catalog:read", "gift:cards", "notes", "orders:read", "orders:write", "payments"}, []string{"gift:cards"}, []string{"gift:cards"}},
		{"a held scope the Company no longer describes is listed", co, nil, []string{"legacy"},
			[]string{"catalog:read", "legacy", "notes", "orders:read", "orders:write", "payments"}, []string{"legacy"}, nil},
		{"no hint says none: nothing starts ticked", &discovery.Company{Scopes: []discovery.Scope{{Name: "notes"}, {Name: "w", Changes: "reversible", PersonalData: &no}}}, nil, nil,
			[]string{"notes", "w"}, nil, nil},
		{"an unknown changes hint is not none", &discovery.Company{Scopes: []discovery.Scope{{Name: "x", Changes: "None", PersonalData: &no}}}, nil, nil,
			[]string{"x"}, nil, nil},
		{"no Company", nil, []string{"orders:read"}, nil,
			[]string{"orders:read"}, []string{"orders:read"}, []string{"orders:read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Choices(tc.co, tc.requested, tc.held)
			var names, checked, flagged []string
			for _, c := range got {
				names = append(names, c.Name)
				if c.Checked {
					checked = append(checked, c.Name)
				}
				if c.Requested {
					flagged = append(flagged, c.Name)
				}
				if c.Held != slices.Contains(tc.held, c.Name) {
					t.Errorf("%s: Held = %v", c.Name, c.Held)
				}
			}
			if !slices.Equal(names, tc.names) || !slices.Equal(checked, tc.checked) || !slices.Equal(flagged, tc.flagged) {
				t.Errorf("Choices:\n listed %v\n ticked %v\n requested %v\nwant\n listed %v\n ticked %v\n requested %v",
					names, checked, flagged, tc.names, tc.checked, tc.flagged)
			}
		})
	}
	if got := Choices(co, nil, nil); got[2].Description != "See your orders" || got[2].Changes != "none" || !got[2].Hinted {
		t.Errorf("the description and hints are not Describe's: %+v", got[2])
	}
}

func TestCheckDeviceLink(t *testing.T) {
	co := &discovery.Company{Issuer: "https://auth.shop.example", Organization: discovery.Organization{Name: "Shop"},
		AuthorizationServer: &discovery.ASMetadata{ProtectedResources: []string{"https://shop.example", "https://mcp.shop.example/mcp"}}}
	tests := []struct {
		link string
		ok   bool
	}{
		{"https://auth.shop.example/device", true},
		{"https://AUTH.shop.example/device?user_code=X", true},
		{"https://login.auth.shop.example/device", true},
		{"https://shop.example/activate", true},
		{"https://www.shop.example/activate", true},
		{"https://mcp.shop.example/device", true},
		{"https://shop.example:8443/activate", false},
		{"https://evilshop.example/device", false},
		{"https://shop.example.evil.net/device", false},
		{"http://auth.shop.example/device", false},
		{"https://user@auth.shop.example/device", false},
		{"https://example/device", false},
	}
	for _, tc := range tests {
		if err := checkDeviceLink(co, tc.link); (err == nil) != tc.ok {
			t.Errorf("checkDeviceLink(%q) = %v, want ok=%v", tc.link, err, tc.ok)
		}
	}
}

func TestResourceMetadataURL(t *testing.T) {
	tests := map[string]string{
		"https://mcp.example.com/mcp":     "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
		"https://example.com":             "https://example.com/.well-known/oauth-protected-resource",
		"https://example.com/":            "https://example.com/.well-known/oauth-protected-resource",
		"https://api.example.com/v1/":     "https://api.example.com/.well-known/oauth-protected-resource/v1",
		"https://shop.localhost:8443/mcp": "https://shop.localhost:8443/.well-known/oauth-protected-resource/mcp",
	}
	for in, want := range tests {
		if got, err := ResourceMetadataURL(in); err != nil || got != want {
			t.Errorf("ResourceMetadataURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ResourceMetadataURL("http://example.com/mcp"); err == nil {
		t.Error("a non-HTTPS resource was accepted")
	}
}

// FuzzParseToken feeds Company token responses to the checks of RFC 6749 §5.1 and spec 4.7: they
// never panic, and whatever they accept grants at least one scope and none beyond those requested.
func FuzzParseToken(f *testing.F) {
	f.Add([]byte(`{"access_token":"a","token_type":"Bearer","refresh_token":"r","scope":"orders:read"}`), true)
	f.Add([]byte(`{"access_token":"a","token_type":"DPoP","expires_in":3600}`), false)
	f.Add([]byte(`{"access_token":"a","token_type":"bearer","scope":""}`), false)
	f.Add([]byte(`{"access_token":1}`), false)
	f.Add([]byte(`{"access_token":"","token_type":"Bearer","scope":"orders:read"}`), false)
	f.Add([]byte(`{"access_token":"a","token_type":"Bearer","scope":"orders:read admin"}`), false)
	req := []string{"orders:read", "orders:write"}
	f.Fuzz(func(t *testing.T, body []byte, dpop bool) {
		tr, granted, err := parseToken("fuzz", body, req, false, dpop)
		if err != nil {
			return
		}
		if tr.AccessToken == "" || len(granted) == 0 {
			t.Fatalf("accepted %s", body)
		}
		for _, g := range granted {
			if !slices.Contains(req, g) {
				t.Fatalf("granted %q beyond the request: %s", g, body)
			}
		}
	})
}

// FuzzCheckDeviceLink: only links on the Company's hosts pass, whatever the input.
func FuzzCheckDeviceLink(f *testing.F) {
	co := &discovery.Company{Issuer: "https://auth.shop.example", AuthorizationServer: &discovery.ASMetadata{ProtectedResources: []string{"https://shop.example"}}}
	f.Add("https://auth.shop.example/device")
	f.Add("https://shop.example.evil/device")
	f.Add("https://x\x00.shop.example/")
	f.Add("https://evilshop.example/device")
	f.Add("http://auth.shop.example/device")
	f.Add("https://auth.shop.example:8443/device")
	f.Add("https://user@auth.shop.example/device")
	f.Fuzz(func(t *testing.T, link string) {
		if checkDeviceLink(co, link) != nil {
			return
		}
		if !strings.HasPrefix(strings.ToLower(link), "https://") {
			t.Fatalf("accepted non-HTTPS %q", link)
		}
		// The model of spec 4.3: the issuer's host or a listed resource's host, or a subdomain
		// of one (whole labels), on the default port, without user information.
		u, err := url.Parse(link)
		if err != nil || u.User != nil || u.Port() != "" {
			t.Fatalf("accepted %q (%v, user %v, port %q)", link, err, u.User, u.Port())
		}
		h := strings.ToLower(u.Hostname())
		ok := false
		for _, a := range []string{"auth.shop.example", "shop.example"} {
			ok = ok || h == a || strings.HasSuffix(h, "."+a)
		}
		if !ok {
			t.Fatalf("accepted %q on host %q, which is not the issuer's or a protected resource's", link, h)
		}
	})
}
