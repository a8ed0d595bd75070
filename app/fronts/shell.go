package fronts

import (
	"strings"

	"github.com/poppydesk/poppydesk/app"
)

// Section IDs, in the order of the window's navigation rail.
const (
	SectionApprovals     = "approvals"
	SectionCompanies     = "companies"
	SectionSignIn        = "signin"
	SectionConversations = "conversations"
	SectionBrowser       = "browser"
	SectionInspector     = "inspector"
	SectionSettings      = "settings"
)

// sectionTitles lists the window's sections in navigation order.
var sectionTitles = []struct{ id, title string }{
	{SectionApprovals, "Approvals"},
	{SectionCompanies, "Companies"},
	{SectionSignIn, "Sign-in"},
	{SectionConversations, "Conversations"},
	{SectionBrowser, "Browser"},
	{SectionInspector, "Inspector"},
	{SectionSettings, "Settings"},
}

// KeyringNotConnected is what a service without a Host says of the keyring.
const KeyringNotConnected = "not connected yet"

// Section is one entry of the window's navigation.
type Section struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Count is the number of items that need the user's attention (for Approvals: pending
	// approvals). Zero shows no badge.
	Count int `json:"count"`
}

// AppInfo describes the running application for the header and Settings.
type AppInfo struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Protocol  string `json:"protocol"`
	DataDir   string `json:"dataDir"`
	ConfigDir string `json:"configDir"`
	LogFile   string `json:"logFile"`
	// Keyring says whether secrets can be stored in the OS keyring.
	Keyring string `json:"keyring"`
	// Demo names the reference Company when the window runs in demo mode; empty otherwise.
	Demo string `json:"demo"`
	// Developer names, while developer mode is on, the Companies under development and the CA
	// trusted for their hosts only (the header's badge); empty otherwise.
	Developer string `json:"developer"`
	// Problem is the kind of the Host's Problem ("no_identity", "no_keyring",
	// "keyring_locked"; "" when the engine runs), ProblemText its words.
	Problem     string `json:"problem"`
	ProblemText string `json:"problemText"`
	// Identity is the published identity Poppydesk signs with (its client_id, spec 4.1; ""
	// without one); IdentityMode says whose it is: "self", "operator" or "demo" ("" without).
	Identity     string `json:"identity"`
	IdentityMode string `json:"identityMode"`
	// Operator is the operator's base URL when one publishes the identity.
	Operator string `json:"operator"`
	// StateFile is the state database; Socket the model's MCP socket ("" when it does not
	// listen).
	StateFile string `json:"stateFile"`
	Socket    string `json:"socket"`
	// Reset is true once Reset everything ran in this window.
	Reset bool `json:"reset"`
	// DefaultOperator is the operator this build names for "Get started" ("" when none).
	DefaultOperator string `json:"defaultOperator"`
	// Welcome is set when this start follows Get started: the window says Poppydesk is ready.
	Welcome bool `json:"welcome"`
	// DemoFromWindow is set in a demo started from the window, which offers to leave it.
	DemoFromWindow bool `json:"demoFromWindow"`
}

// Shell is the window's service for the application frame: header, navigation and Settings,
// over the Host. It is bound to the window; every exported method is callable from the
// frontend, so it has no method that changes anything the user did not ask for in the window.
type Shell struct{ h *app.Host }

// Info returns what the window shows about the application.
func (s *Shell) Info() AppInfo {
	info := AppInfo{Name: "Poppydesk", Protocol: "Personal Agent Protocol 0.4, Operations extension v2", Keyring: KeyringNotConnected}
	if s.h == nil {
		return info
	}
	a := s.h.About()
	info.Version, info.DataDir, info.ConfigDir, info.LogFile = a.Version, a.Paths.Data, a.Paths.Config, a.Paths.LogFile()
	if a.Keyring != "" {
		info.Keyring = a.Keyring
	}
	d, demo := s.h.Demo()
	if demo {
		info.Demo = d.Name + " (" + d.Identifier + ")"
	}
	if dev := a.Developer; dev.On() && !demo {
		names := dev.Companies
		if len(names) == 0 {
			names = dev.Hosts
		}
		info.Developer = "Developer mode: " + strings.Join(names, ", ")
		if dev.CAFile != "" {
			info.Developer += " · CA " + dev.CAFile
		}
	}
	if p := s.h.Problem(); p != nil {
		info.Problem, info.ProblemText = p.Kind, p.Text
	}
	info.Identity, info.IdentityMode, info.Operator = a.ClientID, a.IdentityMode, a.Operator
	info.StateFile, info.Socket, info.Reset = a.StateFile, a.Socket, a.Reset
	info.DefaultOperator, info.Welcome, info.DemoFromWindow = s.h.DefaultOperator(), s.h.Welcome(), s.h.DemoFromWindow()
	return info
}

// Sections returns the navigation entries with their counts (Approvals: the approvals waiting
// for a decision; Sign-in: the model's open sign-in requests).
func (s *Shell) Sections() []Section {
	approvals, signIns := s.h.Waiting()
	return sectionsOf(map[string]int{SectionApprovals: approvals, SectionSignIn: signIns})
}

// sectionsOf lists the sections in navigation order with their counts (a negative count shows
// no badge).
func sectionsOf(counts map[string]int) []Section {
	out := make([]Section, len(sectionTitles))
	for i, t := range sectionTitles {
		out[i] = Section{ID: t.id, Title: t.title, Count: max(0, counts[t.id])}
	}
	return out
}

// FrontendReady is called by the window once it has shown the data it loaded from Go. It only
// records the moment in the log (the smoke test measures cold start up to it, and it proves
// that calls from the window reach Go under the window's Content-Security-Policy).
func (s *Shell) FrontendReady() {
	if s.h != nil {
		s.h.Logger().Info("window frontend ready")
	}
}

// Status returns the current status line.
func (s *Shell) Status() string {
	if s.h == nil {
		return ""
	}
	return s.h.Status().Text()
}
