package browser

import (
	"strings"
	"testing"
)

// TestAllowedRefusesDotSegments: the pure URL check behind browser_open refuses paths Chrome
// (or the server) would resolve to another page, such as the browser-session endpoint reached
// through /x/../poppy/browser-session (invariant 6, spec 6: the join code is for the join only).
func TestAllowedRefusesDotSegments(t *testing.T) {
	s := &Session{cfg: Config{
		Website:  []string{"https://shop.example"},
		Endpoint: "https://shop.example/poppy/browser-session",
	}}
	tests := []struct {
		url  string
		want bool
	}{
		{"https://shop.example/", true},
		{"https://shop.example/orders/ord_1", true},
		{"https://shop.example/a.b/...", true},
		{"https://shop.example/search?q=../poppy/browser-session", true},
		{"https://shop.example/poppy/browser-session", false},
		{"https://shop.example/poppy/browser-session/x", false},
		{"https://shop.example/poppy/%62rowser-session", false},
		{"https://evil.example/orders", false},
		{"http://shop.example/orders", false},
		{"https://shop.example/x/../poppy/browser-session", false},
		{"https://shop.example/x/%2e%2e/poppy/browser-session", false},
		{"https://shop.example/x/%2E%2e/poppy/browser-session", false},
		{"https://shop.example/x/.%2e/poppy/browser-session", false},
		{"https://shop.example/./poppy/browser-session", false},
		{"https://shop.example/orders/..", false},
		{"https://shop.example/x/..%2Fpoppy%2Fbrowser-session", false},
		{`https://shop.example/x\..\poppy\browser-session`, false},
		{"https://shop.example/x%5C..%5Cpoppy%5Cbrowser-session", false},
	}
	for _, tc := range tests {
		if got := s.allowed(tc.url); got != tc.want {
			t.Errorf("allowed(%s) = %v, want %v", tc.url, got, tc.want)
		}
	}
}

// TestCheckJoinFormMasksSecrets: the join errors that name a Company-chosen URL (and reach the
// model through JoinError) mask secret query parameters and JWT shapes (invariant 5).
func TestCheckJoinFormMasksSecrets(t *testing.T) {
	const ep = "https://shop.example/poppy/browser-session"
	const jwt = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"
	tests := []struct {
		name    string
		form    joinForm
		wantErr string // "" for none
		leaks   []string
	}{
		{"good", joinForm{Href: ep, Action: ep, Method: "post", Code: "C", Forms: 1}, "", nil},
		{"address changed with code and state", joinForm{Href: ep + "?code=JOINCODE7&state=ST8", Action: ep, Method: "post", Code: "C", Forms: 1},
			"the page's address changed to https://shop.example/poppy/browser-session?code=[redacted]", []string{"JOINCODE7", "ST8"}},
		{"address changed with a JWT", joinForm{Href: "https://shop.example/x?s=" + jwt, Action: ep, Method: "post", Code: "C", Forms: 1},
			"the page's address changed to https://shop.example/x?s=[redacted]", []string{jwt}},
		{"action with a join code", joinForm{Href: ep, Action: ep + "?join_code=JC9", Method: "post", Code: "C", Forms: 1},
			"does not post to the endpoint", []string{"JC9"}},
		{"no form", joinForm{Href: ep, Action: ep, Method: "post", Forms: 0}, "no single form", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkJoinForm(ep, tc.form)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			for _, l := range tc.leaks {
				if strings.Contains(err.Error(), l) {
					t.Fatalf("the error shows %q: %v", l, err)
				}
			}
		})
	}
}
