package app

import (
	"log/slog"
	"sync"
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

// Event names the window listens to.
const (
	// EventStatus carries the new status line (a string).
	EventStatus = "shell:status"
	// EventSections says the section counts changed; the window calls Sections again.
	EventSections = "shell:sections"
)

// KeyringNotConnected is the honest keyring status until the vault is wired to the window.
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
}

// Counter returns the number of items needing attention in a section (see [Section.Count]).
type Counter func(sectionID string) int

// ShellConfig configures a [Shell].
type ShellConfig struct {
	Version string
	Paths   Paths
	// Keyring is the keyring status shown to the user; empty means [KeyringNotConnected].
	Keyring string
	// Demo describes the reference Company in demo mode.
	Demo string
	// Counter supplies section counts; nil means every count is zero (nothing is pending
	// because no engine is attached).
	Counter Counter
	// Emitter receives the shell's events; nil drops them.
	Emitter Emitter
	// Log receives the window's lifecycle reports; nil discards them.
	Log *slog.Logger
}

// Shell is the window's service for the application frame: header, navigation and Settings.
// It is bound to the window; every exported method is callable from the frontend, so it has
// no method that changes anything the user did not ask for in the window.
type Shell struct {
	cfg    ShellConfig
	status *StatusLine
}

// NewShell returns a Shell. status may be shared with the code that sets it.
func NewShell(cfg ShellConfig, status *StatusLine) *Shell {
	if cfg.Keyring == "" {
		cfg.Keyring = KeyringNotConnected
	}
	if status == nil {
		status = NewStatusLine(cfg.Emitter, "")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Shell{cfg: cfg, status: status}
}

// Info returns what the window shows about the application.
func (s *Shell) Info() AppInfo {
	return AppInfo{
		Name:      "Poppydesk",
		Version:   s.cfg.Version,
		Protocol:  "Personal Agent Protocol 0.4, Operations extension v2",
		DataDir:   s.cfg.Paths.Data,
		ConfigDir: s.cfg.Paths.Config,
		LogFile:   s.cfg.Paths.LogFile(),
		Keyring:   s.cfg.Keyring,
		Demo:      s.cfg.Demo,
	}
}

// Sections returns the navigation entries with their counts.
func (s *Shell) Sections() []Section {
	out := make([]Section, len(sectionTitles))
	for i, t := range sectionTitles {
		out[i] = Section{ID: t.id, Title: t.title}
		if s.cfg.Counter != nil {
			out[i].Count = max(0, s.cfg.Counter(t.id))
		}
	}
	return out
}

// FrontendReady is called by the window once it has shown the data it loaded from Go. It only
// records the moment in the log (the smoke test measures cold start up to it, and it proves
// that calls from the window reach Go under the window's Content-Security-Policy).
func (s *Shell) FrontendReady() {
	s.cfg.Log.Info("window frontend ready")
}

// Status returns the current status line.
func (s *Shell) Status() string { return s.status.Text() }

// StatusLine is the one-line status in the window's header. It is not bound to the window:
// the Go side sets it, the window reads it through [Shell.Status] and the [EventStatus] event.
type StatusLine struct {
	mu   sync.Mutex
	text string
	emit Emitter
}

// NewStatusLine returns a status line that announces changes on emit (nil: no events).
func NewStatusLine(emit Emitter, initial string) *StatusLine {
	return &StatusLine{text: initial, emit: emit}
}

// Set changes the status line and tells the window.
func (l *StatusLine) Set(text string) {
	l.mu.Lock()
	l.text = text
	emit := l.emit
	l.mu.Unlock()
	if emit != nil {
		emit.Emit(EventStatus, text)
	}
}

// Text returns the status line.
func (l *StatusLine) Text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text
}
