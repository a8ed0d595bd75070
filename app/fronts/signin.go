package fronts

// The Sign-in screen's service (spec 4.2, 4.3, 4.7; docs/DESIGN.md "Trust boundaries", invariants 1
// and 5).
//
// A sign-in starts ONLY from a call the window makes after a user gesture: StartDirect and
// StartDevice are methods of a struct bound to the window, and nothing else in Poppydesk calls
// them or the Host's StartSignIn beneath them. The model's sign-in requests (agentcore/modelapi) are only listed here, with the
// model's stated reason marked as the model's words; listing or reading them starts nothing.
// Nothing this service returns holds a token, authorization code, PKCE verifier or device code:
// the flows keep them in unexported fields (agentcore/oauth) and the views below copy only the
// fields the window shows.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/app"
)

// DefaultAccount is the account label a sign-in uses when the window names none (spec 5.4:
// each account at a Company has its own tokens).
const DefaultAccount = "personal"

// Flow states, as the window shows them.
const (
	FlowWaiting   = "waiting"
	FlowSucceeded = "succeeded"
	FlowDeclined  = "declined"
	FlowCancelled = "cancelled"
	FlowExpired   = "expired"
	FlowFailed    = "failed"
)

// SignIn is the window's service for the Sign-in screen, over the Host's sign-in layer and its
// sign-in flows (app/host_signin.go). It is bound to the window: every exported method is
// callable from it, and StartDirect / StartDevice are the only ways a sign-in starts in
// Poppydesk (docs/DESIGN.md invariant 1).
type SignIn struct{ h *app.Host }

// signInTimeout bounds one call from the Sign-in screen.
const signInTimeout = 30 * time.Second

// SignInOffer says which sign-in types a Company offers Personal Agents (spec 3.2, 4).
type SignInOffer struct {
	Offered  bool `json:"offered"`
	Disabled bool `json:"disabled"`
	Direct   bool `json:"direct"`
	Device   bool `json:"device"`
}

// CompanyCard is a Company as the screens show it: only verified discovery data (spec 3, 3.2).
type CompanyCard struct {
	Identifier string `json:"identifier"`
	Name       string `json:"name"`
	Domain     string `json:"domain"`
	Issuer     string `json:"issuer"`
	// Logo is a data: URL of the logo fetched by Poppydesk, or "" for the placeholder.
	Logo   string      `json:"logo"`
	SignIn SignInOffer `json:"signIn"`
}

func cardOf(co *discovery.Company) CompanyCard {
	return CompanyCard{Identifier: co.Identifier, Name: co.Organization.Name, Domain: co.Organization.Domain, Issuer: co.Issuer,
		SignIn: SignInOffer{Offered: co.SignIn.Offered && !co.SignIn.Disabled, Disabled: co.SignIn.Disabled,
			Direct: co.SignIn.Direct && !co.SignIn.Disabled, Device: co.SignIn.Device && !co.SignIn.Disabled}}
}

// PlanScope is one scope on the sign-in screen: the Company's description and hints (spec 4.7,
// shown as the Company's claims) and whether its checkbox starts ticked.
type PlanScope struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Changes is none, reversible or irreversible (no hints, or an unknown value: irreversible).
	Changes      string `json:"changes"`
	PersonalData bool   `json:"personal_data"`
	Hinted       bool   `json:"hinted"`
	Held         bool   `json:"held"`
	// Checked: the box starts ticked (oauth.Choices: the model asked for it or the account
	// holds it; with neither, its hints say it changes nothing).
	Checked bool `json:"checked"`
	// Requested: the model's request names it.
	Requested bool `json:"requested"`
}

// ModelRequest is a sign-in the model's work needs. Reason is the model's own words (the
// request_sign_in tool): the window shows it as "Your agent says: …", never as Poppydesk's words.
// NeedReason is Poppydesk's own words when Poppydesk recorded the request itself because the
// Company refused one of the model's calls for lack of sign-in or scope (spec 7); the window shows
// it as Poppydesk's, and then Reason is empty.
type ModelRequest struct {
	ID         string    `json:"id"`
	Company    string    `json:"company"`
	Name       string    `json:"name"`
	Domain     string    `json:"domain"`
	Scopes     []string  `json:"scopes"`
	Reason     string    `json:"modelReason"`
	NeedReason string    `json:"poppydeskReason"`
	At         time.Time `json:"requested"`
	// ScopeWords are the Company's descriptions of Scopes, by scope (its words, shown beside
	// each scope's name; a scope without one is absent).
	ScopeWords map[string]string `json:"scopeWords"`
}

// SignInPlan is what the Sign-in screen shows before the User decides. Building it starts
// nothing (spec 4.7).
type SignInPlan struct {
	Company CompanyCard `json:"company"`
	Account string      `json:"account"`
	// Accounts are the accounts already signed in at this Company.
	Accounts []oauth.AccountStatus `json:"accounts"`
	Scopes   []PlanScope           `json:"scopes"`
	// Request is the model's request this plan answers, if any.
	Request *ModelRequest `json:"request,omitempty"`
}

// DeviceView is Device Sign-In's prompt (spec 4.3): the Company's name and domain with the link
// and the user code. It never carries the device_code.
type DeviceView struct {
	Organization            string `json:"organization"`
	Domain                  string `json:"domain"`
	VerificationURI         string `json:"verificationUri"`
	VerificationURIComplete string `json:"verificationUriComplete"`
	UserCode                string `json:"userCode"`
	// QR is a PNG data: URL of VerificationURIComplete (or VerificationURI), "" if none.
	QR              string `json:"qr"`
	IntervalSeconds int    `json:"intervalSeconds"`
}

// FlowView is one sign-in as the window shows it.
type FlowView struct {
	ID      string      `json:"id"`
	Kind    string      `json:"kind"` // "direct" or "device"
	State   string      `json:"state"`
	Company CompanyCard `json:"company"`
	Account string      `json:"account"`
	// Requested are the scopes the sign-in asks for (the union with held scopes, spec 4.7).
	Requested []oauth.ScopeInfo `json:"requested"`
	// Deadline is when the flow gives up; RemainingSeconds is the countdown when the view was made.
	Deadline         time.Time `json:"deadline"`
	RemainingSeconds int       `json:"remainingSeconds"`
	// URL is Direct Sign-In's authorization URL, to copy when the browser did not open. It
	// holds no secret (state and code_challenge are useless without the loopback listener and
	// the verifier); it is never given to the model.
	URL       string      `json:"url,omitempty"`
	OpenError string      `json:"openError,omitempty"`
	Device    *DeviceView `json:"device,omitempty"`
	// Granted and Missing are set on success (spec 4.7: fewer scopes may be granted).
	Granted []string `json:"granted,omitempty"`
	Missing []string `json:"missing,omitempty"`
	// Message says in plain words what happened (on failure: why).
	Message string `json:"message,omitempty"`
	// Detail is the technical reason, for the developer (no secret).
	Detail string `json:"detail,omitempty"`
}

func (s *SignIn) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(windowCause(s.h.Context()), signInTimeout)
}

func (s *SignIn) company(ctx context.Context, identifier string) (*discovery.Company, error) {
	if strings.TrimSpace(identifier) == "" {
		return nil, errors.New("choose a Company first (Companies, then \"Sign in…\")")
	}
	return s.h.Company(ctx, identifier)
}

func accountOr(account string) string {
	if a := strings.TrimSpace(account); a != "" {
		return a
	}
	return DefaultAccount
}

// Requests lists the model's open sign-in requests, newest first. Listing starts nothing.
func (s *SignIn) Requests() ([]ModelRequest, error) {
	out := []ModelRequest{}
	if s.h.Refusal() != nil {
		return out, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	rs, err := s.h.SignInRequests().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the agent's sign-in requests failed: %w", err)
	}
	for _, r := range rs {
		m := modelRequestOf(r)
		if co, err := s.h.Engine().Company(ctx, r.Company); err == nil {
			for _, si := range oauth.Describe(co, r.Scopes, nil) {
				if si.Description != "" {
					m.ScopeWords[si.Name] = visible(si.Description)
				}
			}
		}
		out = append(out, m)
	}
	return out, nil
}

func modelRequestOf(r modelapi.SignInRequest) ModelRequest {
	return ModelRequest{ID: r.ID, Company: r.Company, Name: r.CompanyName, Domain: r.Domain,
		Scopes: slices.Clone(r.Scopes), Reason: r.ModelReason, NeedReason: r.Reason, At: r.Requested, ScopeWords: map[string]string{}}
}

// DismissRequest removes one of the model's requests without signing in.
func (s *SignIn) DismissRequest(id string) error {
	if s.h.Refusal() != nil {
		return errors.New("there are no sign-in requests from your agent")
	}
	ctx, cancel := s.ctx()
	defer cancel()
	return s.h.SignInRequests().Dismiss(ctx, id)
}

func (s *SignIn) request(ctx context.Context, id string) (*ModelRequest, error) {
	if id == "" {
		return nil, nil
	}
	rs, err := s.h.SignInRequests().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the agent's sign-in requests failed: %w", err)
	}
	for _, r := range rs {
		if r.ID == id {
			m := modelRequestOf(r)
			return &m, nil
		}
	}
	return nil, fmt.Errorf("your agent's sign-in request %s is no longer open", id)
}

// Plan returns what the screen shows for signing in to company as account (default
// "personal"): the verified Company, its scopes with descriptions and hints, and which boxes
// start ticked, as oauth.Choices decides (spec 4.7, RFC 9700 §2.3). requestID, when set, names
// the model's request being answered. It starts nothing.
func (s *SignIn) Plan(company, account, requestID string) (SignInPlan, error) {
	if err := s.h.Refusal(); err != nil {
		return SignInPlan{}, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	co, err := s.company(ctx, company)
	if err != nil {
		return SignInPlan{}, err
	}
	account = accountOr(account)
	req, err := s.request(ctx, requestID)
	if err != nil {
		return SignInPlan{}, err
	}
	if req != nil && req.Company != co.Identifier {
		return SignInPlan{}, fmt.Errorf("your agent's request %s is for another Company (%s)", req.ID, req.Company)
	}
	var requested []string
	if req != nil {
		requested = req.Scopes
	}
	choices, err := s.h.OAuth().SignInChoices(ctx, co, account, requested)
	if err != nil {
		return SignInPlan{}, fmt.Errorf("reading the account's sign-in state failed: %w", err)
	}
	accounts, err := s.h.OAuth().Accounts(ctx, co.Identifier)
	if err != nil {
		return SignInPlan{}, fmt.Errorf("reading the accounts at %s failed: %w", co.Organization.Domain, err)
	}
	if accounts == nil {
		accounts = []oauth.AccountStatus{}
	}
	plan := SignInPlan{Company: s.card(ctx, co), Account: account, Accounts: accounts, Request: req, Scopes: []PlanScope{}}
	for _, c := range choices {
		plan.Scopes = append(plan.Scopes, PlanScope{Name: c.Name, Description: c.Description, Changes: c.Changes, PersonalData: c.PersonalData,
			Hinted: c.Hinted, Held: c.Held, Checked: c.Checked, Requested: c.Requested})
	}
	return plan, nil
}

// card is the Company as the screens show it, with its logo when the Host could fetch it.
func (s *SignIn) card(ctx context.Context, co *discovery.Company) CompanyCard {
	c := cardOf(co)
	if co.Organization.LogoURI != "" {
		if logo, err := s.h.Logo(ctx, co.Organization.LogoURI); err == nil {
			c.Logo = logo
		} else {
			s.h.Logger().Debug("the Company's logo is not shown", "company", co.Identifier, "reason", err.Error())
		}
	}
	return c
}

// StartDirect starts Direct Sign-In (spec 4.2) for the scopes the User left ticked: Poppydesk
// listens on 127.0.0.1 and opens the authorization URL in the User's browser. requestID, when
// set, is the model's request the User answered; it is dismissed. Called only by the window
// after the User pressed "Sign in in your browser".
func (s *SignIn) StartDirect(company, account string, scopes []string, requestID string) (FlowView, error) {
	return s.start(app.SignInDirect, company, account, scopes, requestID)
}

// StartDevice starts Device Sign-In (spec 4.3): the screen shows the Company's name and domain
// with the link, the user code and a QR code, and Poppydesk polls until the User answers on
// another device. Called only by the window after the User pressed "Sign in on another device".
func (s *SignIn) StartDevice(company, account string, scopes []string, requestID string) (FlowView, error) {
	return s.start(app.SignInDevice, company, account, scopes, requestID)
}

func (s *SignIn) start(kind, company, account string, scopes []string, requestID string) (FlowView, error) {
	if err := s.h.Refusal(); err != nil {
		return FlowView{}, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	co, err := s.company(ctx, company)
	if err != nil {
		return FlowView{}, err
	}
	if len(scopes) == 0 {
		return FlowView{}, errors.New("tick at least one scope: every sign-in asks for at least one")
	}
	rec, err := s.h.StartSignIn(ctx, kind, oauth.SignInRequest{Company: co, Account: accountOr(account), Scopes: scopes})
	if err != nil {
		return FlowView{}, err
	}
	if requestID != "" {
		if err := s.h.SignInRequests().Dismiss(ctx, requestID); err != nil {
			s.h.Logger().Debug("the agent's request was already gone", "request", requestID)
		}
	}
	return s.view(ctx, rec), nil
}

// view converts a sign-in record: the Company's card, the countdown, the device prompt with its
// QR code, and on its end the outcome in plain words.
func (s *SignIn) view(ctx context.Context, f app.SignInFlow) FlowView {
	v := FlowView{ID: f.ID, Kind: f.Kind, State: FlowWaiting, Company: s.card(ctx, f.Company), Account: f.Account,
		Requested: slices.Clone(f.Requested), Deadline: f.Deadline, URL: f.URL}
	if f.OpenErr != nil {
		v.OpenError = f.OpenErr.Error()
	}
	if p := f.Device; p != nil {
		dv := &DeviceView{Organization: p.Organization, Domain: p.Domain, VerificationURI: p.VerificationURI,
			VerificationURIComplete: p.VerificationURIComplete, UserCode: p.UserCode, IntervalSeconds: int(p.Interval / time.Second)}
		link := p.VerificationURIComplete
		if link == "" {
			link = p.VerificationURI
		}
		if qr, err := qrDataURL(link); err == nil {
			dv.QR = qr
		} else {
			s.h.Logger().Warn("making the QR code failed", "error", err.Error())
		}
		v.Device = dv
	}
	switch {
	case !f.Done:
		v.RemainingSeconds = max(0, int((f.Remaining+time.Second-1)/time.Second))
	case f.Err == nil && f.Result != nil:
		v.State, v.Granted, v.Missing = FlowSucceeded, f.Result.Granted, f.Result.Missing
		v.Message = fmt.Sprintf("You signed in to %s.", v.Company.Name)
		if len(f.Result.Missing) > 0 {
			v.Message += " You did not approve every scope Poppydesk asked for."
		}
	default:
		v.State, v.Message, v.Detail = outcome(v.Company.Name, f.Err)
	}
	return v
}

// outcome says in plain words why a sign-in did not succeed.
func outcome(org string, err error) (state, message, detail string) {
	if err == nil {
		return FlowFailed, "The sign-in ended without an answer from " + org + ".", ""
	}
	detail = err.Error()
	switch {
	case errors.Is(err, oauth.ErrDeclined):
		return FlowDeclined, "The sign-in was declined at " + org + ", or no scope was approved. Nothing changed.", detail
	case errors.Is(err, oauth.ErrCancelled):
		return FlowCancelled, "You cancelled the sign-in. Nothing changed.", ""
	case errors.Is(err, oauth.ErrTimedOut):
		return FlowExpired, "The sign-in did not finish in time. Start it again when you are ready.", detail
	}
	var oe *oauth.Error
	if errors.As(err, &oe) && oe.Problem != "" {
		return FlowFailed, "The sign-in to " + org + " failed: " + oe.Problem + ".", detail
	}
	return FlowFailed, "The sign-in to " + org + " failed. Your existing sign-in, if any, is unchanged.", detail
}

// Flow returns the current state of one sign-in.
func (s *SignIn) Flow(id string) (FlowView, error) {
	f, err := s.h.SignIn(id)
	if err != nil {
		return FlowView{}, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	return s.view(ctx, f), nil
}

// Current returns the most recent sign-in of this run (ID "" when there is none), so the screen
// shows it again after the User switched sections.
func (s *SignIn) Current() FlowView {
	f, ok := s.h.LatestSignIn()
	if !ok {
		return FlowView{}
	}
	ctx, cancel := s.ctx()
	defer cancel()
	return s.view(ctx, f)
}

// Cancel stops a waiting sign-in (the loopback listener closes, or polling stops).
func (s *SignIn) Cancel(id string) error { return s.h.CancelSignIn(id) }

// qrDataURL renders link as a QR code (medium error correction, 256 px) in a PNG data: URL,
// which the window's Content-Security-Policy allows (img-src 'self' data:).
func qrDataURL(link string) (string, error) {
	if link == "" {
		return "", errors.New("no link to encode")
	}
	png, err := qrcode.Encode(link, qrcode.Medium, 256)
	if err != nil {
		return "", fmt.Errorf("encoding the link as a QR code failed: %w", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), nil
}
