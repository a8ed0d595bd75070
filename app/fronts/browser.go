package fronts

import (
	"context"
	"encoding/base64"
	"slices"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/app"
)

// BrowserState is what the window's Browser view shows: the current page's screenshot, its URL
// and the join state. It holds no cookie, code or token.
type BrowserState struct {
	Open        bool     `json:"open"`
	Company     string   `json:"company"`
	CompanyName string   `json:"companyName"`
	Account     string   `json:"account"`
	URL         string   `json:"url"`
	Joined      bool     `json:"joined"`   // joined to the Session (false: a visitor or not yet)
	SignedIn    bool     `json:"signedIn"` // the website acts for Account
	Scopes      []string `json:"scopes"`
	JoinText    string   `json:"joinText"`
	Screenshot  string   `json:"screenshot"` // data:image/png;base64,... ("" none)
	Visible     bool     `json:"visible"`
	Updated     string   `json:"updated"` // RFC 3339
	Problem     string   `json:"problem"`
}

// Browser is the bound service of the window's Browser view: what the Host saw of the model's
// browsing (app/host_browser.go), which changes as [app.EventBrowser]. The window can only watch
// and open the same Session visibly; it authorizes nothing.
type Browser struct{ h *app.Host }

// State is what the view shows.
func (b *Browser) State() BrowserState { return browserStateOf(b.h.BrowserSeen()) }

// browserStateOf converts what the Host saw of the model's last browser action.
func browserStateOf(v app.BrowserSeen) BrowserState {
	if v.At.IsZero() { // the model has not browsed yet
		return BrowserState{}
	}
	r := v.Report
	st := BrowserState{Open: r.Session != nil, Company: r.Company, CompanyName: r.CompanyName, Account: r.Account,
		JoinText: r.Words, URL: v.URL, Visible: v.Visible, Updated: v.At.UTC().Format(time.RFC3339)}
	if r.Joined != nil {
		st.Joined, st.SignedIn, st.Scopes = r.Joined.Endpoint != "", r.Joined.SignedIn, slices.Clone(r.Joined.Scopes)
	}
	if r.Err != nil {
		st.Problem = r.Err.Error()
	}
	if len(v.PNG) > 0 {
		st.Screenshot = "data:image/png;base64," + base64.StdEncoding.EncodeToString(v.PNG)
	}
	return st
}

// ShowWindow opens the current Session's browser visibly, for the user to watch (a restart with
// the same profile and cookies). It needs a display.
func (b *Browser) ShowWindow() error {
	if b.h == nil {
		return b.h.Refusal()
	}
	ctx, cancel := context.WithTimeout(inspect.WithCause(b.h.Context(), inspect.Cause{Kind: inspect.CauseWindow, Name: "Browser.ShowWindow"}), 60*time.Second)
	defer cancel()
	return b.h.ShowBrowser(ctx)
}
