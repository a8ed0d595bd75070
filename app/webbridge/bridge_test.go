package webbridge

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// Calc is a bound struct for the tests.
type Calc struct{}

type Person struct {
	Name string `json:"name"`
}

func (*Calc) Add(a, b int) int { return a + b }
func (*Calc) Greet(p Person) (string, error) {
	if p.Name == "" {
		return "", errors.New("a name is needed")
	}
	return "Hello, " + p.Name, nil
}
func (*Calc) Zero() int            { return 0 }
func (*Calc) Fail() error          { return errors.New("it failed on purpose") }
func (*Calc) Nothing()             {}
func (*Calc) Panic() int           { panic("boom") }
func (*Calc) Sum(xs ...int) int    { return len(xs) } // variadic: not bound, like Wails
func (*Calc) Three() (a, b, c int) { return }         // three results: not bound
func (*Calc) hidden() int          { return 1 }

var testAssets = fstest.MapFS{
	"index.html":    {Data: []byte("<!doctype html><html><head><title>t</title><script type=\"module\" src=\"/assets/app.js\"></script></head><body>hi</body></html>")},
	"assets/app.js": {Data: []byte("console.log(1)")},
}

func start(t *testing.T) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, "127.0.0.1:0", Config{Assets: testAssets, Bind: []any{&Calc{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Close() })
	return s
}

// client does not follow redirects, so the token exchange can be inspected.
var client = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

type reqOpt func(*http.Request)

func withCookie(s *Server) reqOpt {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: CookieName, Value: s.Token()}) }
}
func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }
func withHost(h string) reqOpt      { return func(r *http.Request) { r.Host = h } }

func do(t *testing.T, method, u, body string, opts ...reqOpt) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(req)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestStartRefusesNonLoopbackAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "localhost:0", "[::1]:0", "127.0.0.2:0", ":0", "192.168.1.1:80"} {
		t.Run(addr, func(t *testing.T) {
			_, err := Start(context.Background(), addr, Config{Assets: testAssets})
			if err == nil || !strings.Contains(err.Error(), "127.0.0.1:PORT") {
				t.Fatalf("err = %v, want a refusal that says 127.0.0.1:PORT", err)
			}
		})
	}
}

func TestStartNeedsABuiltFrontend(t *testing.T) {
	_, err := Start(context.Background(), "127.0.0.1:0", Config{Assets: fstest.MapFS{}})
	if err == nil || !strings.Contains(err.Error(), "npm run build") {
		t.Fatalf("err = %v, want advice to build the frontend", err)
	}
	_, err = Start(context.Background(), "127.0.0.1:0", Config{Assets: testAssets, Bind: []any{Calc{}}})
	if err == nil {
		t.Fatal("binding a struct value (not a pointer) was accepted")
	}
}

func TestTokenExchange(t *testing.T) {
	s := start(t)
	tests := []struct {
		name       string
		url        string
		opts       []reqOpt
		wantStatus int
	}{
		{"no token, no cookie", s.Origin() + "/", nil, http.StatusUnauthorized},
		{"wrong token", s.Origin() + "/?token=nope", nil, http.StatusUnauthorized},
		{"wrong cookie", s.Origin() + "/", []reqOpt{func(r *http.Request) { r.AddCookie(&http.Cookie{Name: CookieName, Value: "x"}) }}, http.StatusUnauthorized},
		{"shim without cookie", s.Origin() + shimPath, nil, http.StatusUnauthorized},
		{"events without cookie", s.Origin() + eventsPath, nil, http.StatusUnauthorized},
		{"asset without cookie", s.Origin() + "/assets/app.js", nil, http.StatusUnauthorized},
		{"asset with cookie", s.Origin() + "/assets/app.js", []reqOpt{withCookie(s)}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := do(t, "GET", tt.url, "", tt.opts...)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.wantStatus)
			}
		})
	}

	res, _ := do(t, "GET", s.URL(), "")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("token URL: status %d, Location %q; want 303 to /", res.StatusCode, res.Header.Get("Location"))
	}
	var c *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == CookieName {
			c = k
		}
	}
	if c == nil || c.Value != s.Token() || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Fatalf("cookie = %+v, want the token, HttpOnly, SameSite=Strict, Path=/", c)
	}

	res, body := do(t, "GET", s.Origin()+"/", "", withCookie(s))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("index with cookie: %d %s", res.StatusCode, body)
	}
	if !strings.Contains(body, `<head><script src="/bridge/shim.js"></script><title>`) {
		t.Errorf("the shim is not the first script of <head>: %s", body)
	}
	if got := res.Header.Get("Content-Security-Policy"); got != DefaultCSP {
		t.Errorf("CSP header = %q", got)
	}
	if res.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Errorf("headers = %v", res.Header)
	}
}

func TestRefusesForeignHostAndOrigin(t *testing.T) {
	s := start(t)
	port := s.hostport[strings.LastIndex(s.hostport, ":")+1:]
	tests := []struct {
		name string
		opts []reqOpt
		want int
	}{
		{"DNS rebinding: attacker's name", []reqOpt{withHost("evil.example:" + port)}, http.StatusMisdirectedRequest},
		{"localhost is not our name", []reqOpt{withHost("localhost:" + port)}, http.StatusMisdirectedRequest},
		{"another port", []reqOpt{withHost("127.0.0.1:1")}, http.StatusMisdirectedRequest},
		{"host without port", []reqOpt{withHost("127.0.0.1")}, http.StatusMisdirectedRequest},
		{"foreign origin", []reqOpt{withHeader("Origin", "http://evil.example")}, http.StatusForbidden},
		{"localhost origin", []reqOpt{withHeader("Origin", "http://localhost:"+port)}, http.StatusForbidden},
		{"opaque origin", []reqOpt{withHeader("Origin", "null")}, http.StatusForbidden},
		{"https origin", []reqOpt{withHeader("Origin", "https://127.0.0.1:"+port)}, http.StatusForbidden},
		{"cross-site fetch", []reqOpt{withHeader("Sec-Fetch-Site", "cross-site")}, http.StatusForbidden},
		{"same-site fetch", []reqOpt{withHeader("Sec-Fetch-Site", "same-site")}, http.StatusForbidden},
		{"own origin", []reqOpt{withHeader("Origin", s.Origin()), withHeader("Sec-Fetch-Site", "same-origin")}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]reqOpt{withCookie(s), withHeader("Content-Type", "application/json")}, tt.opts...)
			res, body := do(t, "POST", s.Origin()+callPath, `{"name":"webbridge.Calc.Add","args":[1,2]}`, opts...)
			if res.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%s)", res.StatusCode, tt.want, body)
			}
			if tt.want != http.StatusOK && strings.Contains(body, `"result"`) {
				t.Fatalf("a refused call ran: %s", body)
			}
			// The token exchange is refused the same way.
			res, _ = do(t, "GET", s.URL(), "", tt.opts...)
			if tt.want != http.StatusOK && res.StatusCode != tt.want {
				t.Fatalf("token URL: status %d, want %d", res.StatusCode, tt.want)
			}
		})
	}
}

func TestCall(t *testing.T) {
	s := start(t)
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantBody   string
	}{
		{"two ints", `{"name":"webbridge.Calc.Add","args":[2,40]}`, 200, `{"result":42}`},
		{"zero is a result, not nothing", `{"name":"webbridge.Calc.Zero","args":[]}`, 200, `{"result":0}`},
		{"struct argument", `{"name":"webbridge.Calc.Greet","args":[{"name":"Ada"}]}`, 200, `{"result":"Hello, Ada"}`},
		{"method error", `{"name":"webbridge.Calc.Greet","args":[{}]}`, 200, `{"error":"a name is needed"}`},
		{"error only", `{"name":"webbridge.Calc.Fail","args":[]}`, 200, `{"error":"it failed on purpose"}`},
		{"no result", `{"name":"webbridge.Calc.Nothing","args":[]}`, 200, `{"result":null}`},
		{"panic", `{"name":"webbridge.Calc.Panic","args":[]}`, 500, `{"error":"webbridge.Calc.Panic failed with an internal error; see the log file"}`},
		{"unknown", `{"name":"webbridge.Calc.Nope","args":[]}`, 404, `{"error":"there is no bound method \"webbridge.Calc.Nope\""}`},
		{"unexported", `{"name":"webbridge.Calc.hidden","args":[]}`, 404, ``},
		{"variadic is not bound", `{"name":"webbridge.Calc.Sum","args":[[1]]}`, 404, ``},
		{"three results are not bound", `{"name":"webbridge.Calc.Three","args":[]}`, 404, ``},
		{"wrong arity", `{"name":"webbridge.Calc.Add","args":[1]}`, 400, `{"error":"webbridge.Calc.Add takes 2 arguments, got 1"}`},
		{"wrong type", `{"name":"webbridge.Calc.Add","args":["1",2]}`, 400, ``},
		{"not JSON", `{"name":`, 400, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := do(t, "POST", s.Origin()+callPath, tt.body, withCookie(s), withHeader("Content-Type", "application/json"))
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d (%s)", res.StatusCode, tt.wantStatus, body)
			}
			if tt.wantBody != "" && body != tt.wantBody {
				t.Fatalf("body %s, want %s", body, tt.wantBody)
			}
		})
	}
	t.Run("must be JSON", func(t *testing.T) {
		res, _ := do(t, "POST", s.Origin()+callPath, `{"name":"webbridge.Calc.Zero","args":[]}`, withCookie(s), withHeader("Content-Type", "text/plain"))
		if res.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("status %d, want 415", res.StatusCode)
		}
	})
	t.Run("must be POST", func(t *testing.T) {
		res, _ := do(t, "GET", s.Origin()+callPath, "", withCookie(s))
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("status %d, want 405", res.StatusCode)
		}
	})
	if got := strings.Join(s.Methods(), " "); got != "webbridge.Calc.Add webbridge.Calc.Fail webbridge.Calc.Greet webbridge.Calc.Nothing webbridge.Calc.Panic webbridge.Calc.Zero" {
		t.Errorf("Methods() = %s", got)
	}
}

func TestShim(t *testing.T) {
	s := start(t)
	res, body := do(t, "GET", s.Origin()+shimPath, "", withCookie(s))
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("shim: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !strings.Contains(body, `var manifest = {"webbridge":{"Calc":["Add","Fail","Greet","Nothing","Panic","Zero"]}};`) {
		t.Errorf("manifest missing from the shim:\n%s", body[:300])
	}
	for _, banned := range []string{"eval(", "new Function", "innerHTML"} {
		if strings.Contains(body, banned) {
			t.Errorf("the shim uses %s, which the CSP or the rendering rules forbid", banned)
		}
	}
}

func TestEvents(t *testing.T) {
	s := start(t)
	req, _ := http.NewRequest("GET", s.Origin()+eventsPath, nil)
	req.AddCookie(&http.Cookie{Name: CookieName, Value: s.Token()})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("Content-Type %q", res.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(res.Body)
	if line, _ := rd.ReadString('\n'); line != ": connected\n" {
		t.Fatalf("first line %q", line)
	}
	s.Emit("shell:status", "Signing in")
	s.Emit("bad", func() {}) // not JSON: dropped, the stream goes on
	s.Emit("shell:sections")
	var got []string
	for len(got) < 2 {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			got = append(got, strings.TrimSpace(data))
		}
	}
	want := []string{`{"name":"shell:status","data":["Signing in"]}`, `{"name":"shell:sections","data":[]}`}
	if got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("events %v, want %v", got, want)
	}
	// Close ends the stream.
	s.Close()
	if _, err := io.ReadAll(rd); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("stream ended with %v", err)
	}
}

func TestEmitFromPage(t *testing.T) {
	s := start(t)
	got := make(chan []any, 1)
	s.On("window:hello", func(data ...any) { got <- data })
	res, _ := do(t, "POST", s.Origin()+emitPath, `{"name":"window:hello","data":["hi",2]}`, withCookie(s), withHeader("Content-Type", "application/json"))
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", res.StatusCode)
	}
	select {
	case d := <-got:
		if len(d) != 2 || d[0] != "hi" || d[1] != float64(2) {
			t.Fatalf("data %v", d)
		}
	default:
		t.Fatal("the Go listener was not called")
	}
}

func TestTokenURLKeepsOtherQuery(t *testing.T) {
	s := start(t)
	u, _ := url.Parse(s.URL())
	q := u.Query()
	q.Set("x", "1")
	u.RawQuery = q.Encode()
	res, _ := do(t, "GET", u.String(), "")
	if loc := res.Header.Get("Location"); loc != "/?x=1" {
		t.Fatalf("Location %q, want /?x=1 (token removed)", loc)
	}
}

// TestTokenURLIsOneTime: the first-load URL is traded for the cookie once; loading it again
// without the cookie is refused, and with the cookie just redirects; the cookie's value is not
// the URL's token, so a used URL gives nothing.
func TestTokenURLIsOneTime(t *testing.T) {
	s := start(t)
	u, _ := url.Parse(s.URL())
	if tok := u.Query().Get("token"); tok == "" || tok == s.Token() {
		t.Fatalf("the URL's token %q must be set and differ from the cookie's value", tok)
	}
	tests := []struct {
		name       string
		url        string
		opts       []reqOpt
		wantStatus int
		wantCookie bool
	}{
		{"wrong token", s.Origin() + "/?token=nope", nil, http.StatusUnauthorized, false},
		{"first load", s.URL(), nil, http.StatusSeeOther, true},
		{"second load without the cookie", s.URL(), nil, http.StatusUnauthorized, false},
		{"second load with the cookie", s.URL(), []reqOpt{withCookie(s)}, http.StatusSeeOther, false},
		{"the used token as a cookie", s.Origin() + "/", []reqOpt{func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: CookieName, Value: u.Query().Get("token")})
		}}, http.StatusUnauthorized, false},
		{"the cookie still works", s.Origin() + "/", []reqOpt{withCookie(s)}, http.StatusOK, false},
	}
	for _, tt := range tests { // in order: each step depends on the ones before
		res, body := do(t, "GET", tt.url, "", tt.opts...)
		if res.StatusCode != tt.wantStatus {
			t.Fatalf("%s: status %d, want %d (%s)", tt.name, res.StatusCode, tt.wantStatus, body)
		}
		var got *http.Cookie
		for _, c := range res.Cookies() {
			if c.Name == CookieName {
				got = c
			}
		}
		if (got != nil) != tt.wantCookie || (got != nil && got.Value != s.Token()) {
			t.Fatalf("%s: cookie %+v, want set=%v", tt.name, got, tt.wantCookie)
		}
		if tt.wantStatus == http.StatusSeeOther && res.Header.Get("Location") != "/" {
			t.Fatalf("%s: Location %q, want /", tt.name, res.Header.Get("Location"))
		}
	}
}
