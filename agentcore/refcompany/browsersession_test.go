package refcompany_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

var codeRE = regexp.MustCompile(`name="code" value="([^"]+)"`)

// loadJoinPage is step 1 as a browser without JavaScript does it: the code and the join cookie.
func loadJoinPage(t *testing.T, s *refcompany.Server, hc *http.Client) (code string, cookie *http.Cookie, resp *http.Response) {
	t.Helper()
	resp, err := hc.Get(s.BrowserSessionEndpoint())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := codeRE.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no code in the page:\n%s", body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == refcompany.JoinCookie {
			cookie = c
		}
	}
	return string(m[1]), cookie, resp
}

func submitCode(t *testing.T, s *refcompany.Server, hc *http.Client, code string, cookie *http.Cookie) (int, string, []*http.Cookie) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, s.BrowserSessionEndpoint(), strings.NewReader(url.Values{"code": {code}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != nil {
		req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Cookies()
}

// TestJoinPage checks step 1's response (spec 6): the headers, the cookie's attributes, a
// one-time unguessable code per load, and no other cookie.
func TestJoinPage(t *testing.T) {
	s, hc := start(t, refcompany.Options{})
	code, ck, resp := loadJoinPage(t, s, hc)
	for h, want := range map[string]string{"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
		"Content-Security-Policy": "frame-ancestors 'none'", "Cross-Origin-Opener-Policy": "same-origin"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if ck == nil || !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Domain != "" || ck.MaxAge <= 0 {
		t.Errorf("join cookie %+v", ck)
	}
	if len(resp.Cookies()) != 1 {
		t.Errorf("the page set %d cookies, want only the join cookie", len(resp.Cookies()))
	}
	code2, ck2, _ := loadJoinPage(t, s, hc)
	if code == code2 || ck.Value == ck2.Value || len(code) < 20 {
		t.Error("codes or cookies repeat, or are short")
	}
}

// TestJoinSubmitChecks is step 3's checks (spec 6, 10.6) with codes nobody authorized or that
// come with the wrong cookie: each gets an error page with an error status and no cookie, and a
// code counts as used by the first submission whatever its result.
func TestJoinSubmitChecks(t *testing.T) {
	s, hc := start(t, refcompany.Options{})
	for _, tc := range []struct {
		name string
		run  func() (int, string, []*http.Cookie)
		want string
	}{
		{"missing cookie", func() (int, string, []*http.Cookie) {
			code, _, _ := loadJoinPage(t, s, hc)
			return submitCode(t, s, hc, code, nil)
		}, "join cookie is missing"},
		{"code from another browser", func() (int, string, []*http.Cookie) {
			code, _, _ := loadJoinPage(t, s, hc)
			_, other, _ := loadJoinPage(t, s, hc)
			return submitCode(t, s, hc, code, other)
		}, "belongs to another browser"},
		{"not authorized", func() (int, string, []*http.Cookie) {
			code, ck, _ := loadJoinPage(t, s, hc)
			return submitCode(t, s, hc, code, ck)
		}, "not authorized"},
		{"code used twice", func() (int, string, []*http.Cookie) {
			code, ck, _ := loadJoinPage(t, s, hc)
			submitCode(t, s, hc, code, ck)
			return submitCode(t, s, hc, code, ck)
		}, "already used"},
		{"unknown code", func() (int, string, []*http.Cookie) {
			_, ck, _ := loadJoinPage(t, s, hc)
			return submitCode(t, s, hc, "bc_guessed", ck)
		}, "not one this Company issued"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, cookies := tc.run()
			if status != http.StatusBadRequest || !strings.Contains(body, tc.want) || len(cookies) != 0 {
				t.Errorf("HTTP %d, %d cookies, body %q", status, len(cookies), body)
			}
		})
	}
	if len(s.Joins()) != 0 {
		t.Fatal("a join completed")
	}
}

// TestJoinAuthorizeNeedsSession: step 2 is a Session destination (spec 5.3, 6).
func TestJoinAuthorizeNeedsSession(t *testing.T) {
	s, hc := start(t, refcompany.Options{})
	code, _, _ := loadJoinPage(t, s, hc)
	resp, err := hc.Post(s.BrowserSessionEndpoint()+"/authorize", "application/json", strings.NewReader(`{"code":"`+code+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "invalid_session") {
		t.Errorf("authorize without a Session header: %d %s", resp.StatusCode, b)
	}
	if err := s.SetJoinFault("nope", 1); err == nil {
		t.Error("an unknown join fault was accepted")
	}
}

// TestWebsiteVisitor: the website says who the visitor is, and the website's own login works
// without the protocol (the step-3 table's "Logged in as A").
func TestWebsiteVisitor(t *testing.T) {
	s, hc := start(t, refcompany.Options{})
	get := func(path string, cookies ...*http.Cookie) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, s.URL(refcompany.ShopHost, path), nil)
		for _, c := range cookies {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s Content-Type %q", path, ct)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := get("/account"); st != 200 || !strings.Contains(body, `data-session="no"`) || !strings.Contains(body, "Not signed in") {
		t.Errorf("anonymous: %d %s", st, body)
	}
	if st, _ := get("/orders"); st != 401 {
		t.Errorf("orders anonymous: %d", st)
	}
	resp, err := hc.PostForm(s.URL(refcompany.ShopHost, "/login"), url.Values{"account": {refcompany.DefaultAccount}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var login *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == refcompany.LoginCookie {
			login = c
		}
	}
	if login == nil {
		t.Fatal("no login cookie")
	}
	if st, body := get("/orders", login); st != 200 || !strings.Contains(body, "ord_7Hk2") || !strings.Contains(body, "own login") {
		t.Errorf("own login: %d %s", st, body)
	}
}

// TestWebsiteClearsUnknownSession: a Session cookie the website doesn't know (forgotten with
// ForgetWebSessions, or never issued) is cleared, and the visitor is not the Session, so a
// Personal Agent can see that the website no longer recognizes it (spec 6).
func TestWebsiteClearsUnknownSession(t *testing.T) {
	s, hc := start(t, refcompany.Options{})
	if n := s.ForgetWebSessions(); n != 0 {
		t.Fatalf("a fresh website forgot %d Sessions", n)
	}
	for _, tc := range []struct {
		name    string
		cookie  string
		cleared bool
	}{
		{"unknown Session cookie", "forgotten-value", true},
		{"no Session cookie", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, s.URL(refcompany.ShopHost, "/account"), nil)
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: refcompany.SessionCookie, Value: tc.cookie})
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var cleared bool
			for _, c := range resp.Cookies() {
				cleared = cleared || c.Name == refcompany.SessionCookie && c.MaxAge < 0
			}
			if cleared != tc.cleared || !strings.Contains(string(body), `data-session="no"`) {
				t.Errorf("cleared %v (want %v), body %s", cleared, tc.cleared, body)
			}
		})
	}
}

// TestJoinTokenRefusedFault: armed for n authorize requests that carry a token (or switched on
// with SetFault), step 2 answers 401 invalid_token before anything else; a request without a
// token does not consume it.
func TestJoinTokenRefusedFault(t *testing.T) {
	s, hc := start(t, refcompany.Options{})
	authorize := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.BrowserSessionEndpoint()+"/authorize", strings.NewReader(`{"code":"bc_x"}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate") + " " + string(b)
	}
	refused := func(status int, text string) bool {
		return status == 401 && strings.Contains(text, "invalid_token") && strings.Contains(text, refcompany.JoinFaultTokenRefused)
	}
	if err := s.SetJoinFault(refcompany.JoinFaultTokenRefused, 1); err != nil {
		t.Fatal(err)
	}
	if st, text := authorize(""); refused(st, text) {
		t.Errorf("a request without a token was refused by the fault: %d %s", st, text)
	}
	if st, text := authorize("at_some"); !refused(st, text) {
		t.Errorf("armed: %d %s", st, text)
	}
	if st, text := authorize("at_some"); refused(st, text) {
		t.Errorf("the fault outlived its one arming: %d %s", st, text)
	}
	if err := s.SetFault(refcompany.JoinFaultTokenRefused, true); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if st, text := authorize("at_some"); !refused(st, text) {
			t.Errorf("switched on with SetFault: %d %s", st, text)
		}
	}
}
