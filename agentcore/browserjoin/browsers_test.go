package browserjoin_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// fakeSession is a controlled browser that records what it was asked to do. Its website
// forgets the Session (drops the join's cookie) after the action named forgetAfter, until the
// browser joins again. With badCode, Join authorizes a code the Company never issued.
type fakeSession struct {
	forgetAfter string
	badCode     bool

	mu        sync.Mutex
	calls     []string
	forgotten bool
}

func (f *fakeSession) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

func (f *fakeSession) page(action, url string) (browserjoin.Page, error) {
	f.record(action + " " + url)
	f.mu.Lock()
	if action == f.forgetAfter {
		f.forgotten = true
	}
	f.mu.Unlock()
	return browserjoin.Page{URL: url, Alerts: []string{"alert on " + url}, Data: map[string]string{"url": url}}, nil
}

func (f *fakeSession) Join(ctx context.Context, endpoint string, authorize browserjoin.AuthorizeFunc) error {
	f.record("join")
	if f.badCode {
		return authorize(ctx, "bc_never_issued")
	}
	f.mu.Lock()
	f.forgotten = false
	f.mu.Unlock()
	return nil
}

func (f *fakeSession) Recognized(context.Context) (bool, error) {
	f.record("recognized")
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.forgotten, nil
}

func (f *fakeSession) Open(_ context.Context, url string) (browserjoin.Page, error) {
	return f.page("open", url)
}
func (f *fakeSession) Read(context.Context) (browserjoin.Page, error) {
	return f.page("read", "https://shop.example/current")
}
func (f *fakeSession) Submit(_ context.Context, form string, _ map[string]string) (browserjoin.Page, error) {
	return f.page("submit", "https://shop.example/"+form)
}
func (f *fakeSession) Back(context.Context) (browserjoin.Page, error) {
	return f.page("back", "https://shop.example/previous")
}
func (f *fakeSession) Screenshot(context.Context) ([]byte, string, error) {
	f.record("screenshot")
	return []byte("png"), "https://shop.example/current", nil
}

// fakeSessions hands out one fakeSession per key and records how it was asked for.
type fakeSessions struct {
	forgetAfter string // of new sessions
	badCode     bool

	mu       sync.Mutex
	sessions map[string]*fakeSession
	asked    []string // website and endpoint of each Get
}

func (f *fakeSessions) Get(key string, website []string, endpoint string) (browserjoin.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, strings.Join(website, " ")+" "+endpoint)
	if f.sessions == nil {
		f.sessions = map[string]*fakeSession{}
	}
	s := f.sessions[key]
	if s == nil {
		s = &fakeSession{forgetAfter: f.forgetAfter, badCode: f.badCode}
		f.sessions[key] = s
	}
	return s, nil
}

// browsing is the reference Company and an engine that has not discovered it yet.
type browsing struct {
	s *refcompany.Server
	e *engine.Engine
}

func newBrowsing(t *testing.T, edit func(doc map[string]any)) *browsing {
	t.Helper()
	s := poppytest.Start(t, refcompany.Options{})
	if edit != nil {
		s.EditPoppyJSON(edit)
	}
	log := slog.New(slog.DiscardHandler)
	state, err := vault.OpenState(context.Background(), filepath.Join(t.TempDir(), "state.sqlite"), vault.StateOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { state.Close() })
	e, err := engine.New(engine.Config{Transport: s.ClientConfig(), Secrets: store.NewSecrets(store.NewMemoryKV()), State: state, Logger: log,
		Identity: identity.Config{ClientID: s.URL(refcompany.AgentHost, "/agent.json"), ClientName: "browserjoin test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	s.AddHost(refcompany.AgentHost, e.Agent().Handler(log))
	return &browsing{s: s, e: e}
}

// TestBrowsers: each model action runs in the browser of its Company Session, joined first
// (spec 6); the page shows the website forgot the Session → join again at once, opening the
// page again but never sending a form again; a Company without a browser_session_endpoint is
// browsed as a visitor; the window's view hears of every action.
func TestBrowsers(t *testing.T) {
	const signedIn = "personal"
	noEndpoint := func(doc map[string]any) { delete(doc, "web") }
	type want struct {
		calls  []string // the browser's calls over all actions
		joined string   // in the last result's Joined
		url    string   // the last result's URL
		page   bool     // the last result has page data and alerts
		png    bool
		err    string // the last action's error
	}
	for _, tc := range []struct {
		name    string
		edit    func(doc map[string]any)
		forget  string // the action after which the website forgets the Session
		badCode bool   // the join authorizes a code the Company never issued
		account string
		actions []browserjoin.Request
		want    want
	}{
		{name: "open joins first", actions: []browserjoin.Request{{Action: "open", URL: "https://shop.example/a"}},
			want: want{calls: []string{"join", "open https://shop.example/a", "recognized"}, joined: "joined to the Session, signed out", url: "https://shop.example/a", page: true}},
		{name: "joined once for many actions", actions: []browserjoin.Request{{Action: "open", URL: "https://shop.example/a"}, {Action: "read"}, {Action: "back"}},
			want: want{calls: []string{"join", "open https://shop.example/a", "recognized", "recognized", "read https://shop.example/current",
				"recognized", "back https://shop.example/previous", "recognized"}, joined: "joined to the Session, signed out", url: "https://shop.example/previous", page: true}},
		{name: "signed in", account: signedIn, actions: []browserjoin.Request{{Action: "read"}},
			want: want{calls: []string{"join", "read https://shop.example/current"}, joined: "joined to the Session, signed in as personal with orders:read", url: "https://shop.example/current", page: true}},
		{name: "forgotten after open: join again and open the page again", forget: "open",
			actions: []browserjoin.Request{{Action: "open", URL: "https://shop.example/a"}},
			want: want{calls: []string{"join", "open https://shop.example/a", "recognized", "recognized", "join", "open https://shop.example/a"},
				joined: "joined to the Session, signed out", url: "https://shop.example/a", page: true}},
		{name: "forgotten after back: join again and load that page", forget: "back",
			actions: []browserjoin.Request{{Action: "back"}},
			want: want{calls: []string{"join", "back https://shop.example/previous", "recognized", "recognized", "join", "open https://shop.example/previous"},
				joined: "joined to the Session, signed out", url: "https://shop.example/previous", page: true}},
		{name: "forgotten after submit: join again, never send the form again", forget: "submit",
			actions: []browserjoin.Request{{Action: "submit", Form: "exchange"}},
			want: want{calls: []string{"join", "submit https://shop.example/exchange", "recognized", "recognized", "join"},
				joined: "send the form again if it is still needed", url: "https://shop.example/exchange", page: true}},
		{name: "read is not checked for a forgotten Session", forget: "read",
			actions: []browserjoin.Request{{Action: "read"}},
			want:    want{calls: []string{"join", "read https://shop.example/current"}, joined: "joined to the Session, signed out", url: "https://shop.example/current", page: true}},
		{name: "screenshot", actions: []browserjoin.Request{{Action: "screenshot"}},
			want: want{calls: []string{"join", "screenshot"}, joined: "joined to the Session, signed out", url: "https://shop.example/current", png: true}},
		{name: "unknown action", actions: []browserjoin.Request{{Action: "download"}},
			want: want{calls: []string{"join"}, err: `unknown browser action "download"`}},
		{name: "no browser_session_endpoint: a visitor, never joined", edit: noEndpoint, forget: "open",
			actions: []browserjoin.Request{{Action: "open", URL: "https://shop.example/a"}, {Action: "read"}},
			want:    want{calls: []string{"open https://shop.example/a", "read https://shop.example/current"}, joined: "browsing as a signed-out visitor", url: "https://shop.example/current", page: true}},
		{name: "the Company refuses the join", badCode: true, actions: []browserjoin.Request{{Action: "read"}},
			want: want{calls: []string{"join"}, err: "refused to authorize the browser's code"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newBrowsing(t, tc.edit)
			status := func(_ context.Context, _, account string) (bool, []string, error) {
				return account == signedIn, []string{"orders:read"}, nil
			}
			var reports []browserjoin.Report
			sessions := &fakeSessions{forgetAfter: tc.forget, badCode: tc.badCode}
			b := browserjoin.NewBrowsers(browserjoin.BrowsersConfig{Sessions: sessions,
				Engine:  func() (*engine.Engine, browserjoin.StatusFunc) { return w.e, status },
				Observe: func(_ context.Context, r browserjoin.Report) { reports = append(reports, r) }})
			var res *browserjoin.Result
			var err error
			for _, a := range tc.actions {
				a.Company, a.Account = w.s.Domain, tc.account
				if res, err = b.Browse(context.Background(), a); err != nil {
					break
				}
			}
			if len(sessions.sessions) != 1 {
				t.Fatalf("%d browsers, want one for the Session", len(sessions.sessions))
			}
			var fs *fakeSession
			for _, s := range sessions.sessions {
				fs = s
			}
			if !slices.Equal(fs.calls, tc.want.calls) {
				t.Errorf("browser calls\n got %q\nwant %q", fs.calls, tc.want.calls)
			}
			endpoint := w.s.BrowserSessionEndpoint()
			if tc.edit != nil {
				endpoint = ""
			}
			if asked := "https://" + w.s.Domain + " " + endpoint; sessions.asked[0] != asked {
				t.Errorf("Sessions.Get for %q, want %q (the website and its browser_session_endpoint)", sessions.asked[0], asked)
			}
			if len(reports) != len(tc.actions) {
				t.Fatalf("%d reports for %d actions", len(reports), len(tc.actions))
			}
			last := reports[len(reports)-1]
			if last.Company == "" || last.CompanyName == "" || last.Account != tc.account || !strings.HasSuffix(last.Key, "\x00"+tc.account) {
				t.Errorf("report names %+v", last)
			}
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) || last.Err == nil {
					t.Fatalf("Browse: %v, report %v; want %q", err, last.Err, tc.want.err)
				}
				if strings.Contains(err.Error(), "bc_never_issued") {
					t.Errorf("the error shows the join code: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Joined, tc.want.joined) || res.URL != tc.want.url || (res.Page != nil) != tc.want.page ||
				(len(res.Alerts) > 0) != tc.want.page || (res.PNG != nil) != tc.want.png {
				t.Errorf("result %+v, want %+v", res, tc.want)
			}
			if res.Company != last.Company || res.CompanyName != last.CompanyName {
				t.Errorf("result names %q %q, report %q %q", res.Company, res.CompanyName, last.Company, last.CompanyName)
			}
			if last.Session == nil || last.Joined == nil || last.Err != nil || !strings.HasPrefix(res.Joined, last.Words) {
				t.Errorf("report %+v for result %+v", last, res)
			}
		})
	}
}

// TestBrowsersJoinFailureReport: when the join fails, the window's view hears that no browser
// is open and why.
func TestBrowsersJoinFailureReport(t *testing.T) {
	w := newBrowsing(t, nil)
	var rep browserjoin.Report
	b := browserjoin.NewBrowsers(browserjoin.BrowsersConfig{Sessions: &fakeSessions{badCode: true},
		Engine:  func() (*engine.Engine, browserjoin.StatusFunc) { return w.e, nil },
		Observe: func(_ context.Context, r browserjoin.Report) { rep = r }})
	if _, err := b.Browse(context.Background(), browserjoin.Request{Action: "read", Company: w.s.Domain}); err == nil {
		t.Fatal("Browse succeeded with a refused join")
	}
	if rep.Session != nil || rep.Joined != nil || rep.Words != "" || rep.Err == nil {
		t.Errorf("report %+v, want no browser, no join state and the error", rep)
	}
}

// TestBrowsersUnavailable: without browsers, an engine or a known Company, nothing is done and
// the error says why.
func TestBrowsersUnavailable(t *testing.T) {
	w := newBrowsing(t, nil)
	running := func() (*engine.Engine, browserjoin.StatusFunc) { return w.e, nil }
	for _, tc := range []struct {
		name    string
		cfg     browserjoin.BrowsersConfig
		company string
		want    string
	}{
		{"no browsers", browserjoin.BrowsersConfig{Engine: running}, w.s.Domain, "not configured"},
		{"no engine func", browserjoin.BrowsersConfig{Sessions: &fakeSessions{}}, w.s.Domain, "not configured"},
		{"engine not running", browserjoin.BrowsersConfig{Sessions: &fakeSessions{}, Engine: func() (*engine.Engine, browserjoin.StatusFunc) { return nil, nil }}, w.s.Domain, "engine is not running"},
		{"unknown Company", browserjoin.BrowsersConfig{Sessions: &fakeSessions{}, Engine: running}, "nowhere.invalid", "could not be discovered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			observed := false
			tc.cfg.Observe = func(context.Context, browserjoin.Report) { observed = true }
			_, err := browserjoin.NewBrowsers(tc.cfg).Browse(context.Background(), browserjoin.Request{Action: "read", Company: tc.company})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Browse: %v, want %q", err, tc.want)
			}
			if fs, ok := tc.cfg.Sessions.(*fakeSessions); ok && len(fs.asked) != 0 {
				t.Errorf("a browser was asked for: %q", fs.asked)
			}
			if observed {
				t.Error("the view heard of an action that did not reach a Company")
			}
		})
	}
}

// TestJoinedWords: the join state in plain words.
func TestJoinedWords(t *testing.T) {
	for _, tc := range []struct {
		name string
		j    browserjoin.Joined
		want []string
	}{
		{"a visitor", browserjoin.Joined{}, []string{"signed-out visitor", "no browser join"}},
		{"signed out", browserjoin.Joined{Endpoint: "x"}, []string{"joined to the Session, signed out"}},
		{"signed in", browserjoin.Joined{Endpoint: "x", Account: browserjoin.Account{Account: "a", SignedIn: true, Scopes: []string{"s", "t"}}},
			[]string{"joined to the Session, signed in as a with s t"}},
		{"downgraded", browserjoin.Joined{Endpoint: "x", Downgraded: true, Requested: browserjoin.Account{Account: "a", SignedIn: true}},
			[]string{"signed out", "did not accept the sign-in of a", "sign in again"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.j.Words()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Words() = %q, want it to say %q", got, w)
				}
			}
		})
	}
}
