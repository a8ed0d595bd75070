package app

import (
	"strings"
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
}

// Shell is the window's service for the application frame: header, navigation and Settings,
// over the Host. It is bound to the window; every exported method is callable from the
// frontend, so it has no method that changes anything the user did not ask for in the window.
type Shell struct{ h *Host }

// Info returns what the window shows about the application.
func (s *Shell) Info() AppInfo {
	info := AppInfo{Name: "Poppydesk", Protocol: "Personal Agent Protocol 0.4, Operations extension v2", Keyring: KeyringNotConnected}
	h := s.h
	if h == nil {
		return info
	}
	info.Version, info.DataDir, info.ConfigDir, info.LogFile = h.cfg.Version, h.cfg.Paths.Data, h.cfg.Paths.Config, h.cfg.Paths.LogFile()
	if h.keyring != "" {
		info.Keyring = h.keyring
	}
	if d, ok := h.Demo(); ok {
		info.Demo = d.Name + " (" + d.Identifier + ")"
	}
	if dev := h.cfg.Developer; dev.On() && h.demo == nil {
		names := dev.Companies
		if len(names) == 0 {
			names = dev.Hosts
		}
		info.Developer = "Developer mode: " + strings.Join(names, ", ")
		if dev.CAFile != "" {
			info.Developer += " · CA " + dev.CAFile
		}
	}
	return info
}

// Sections returns the navigation entries with their counts (Approvals: the approvals waiting
// for a decision).
func (s *Shell) Sections() []Section {
	counts := map[string]int{}
	if s.h.refusal() == nil {
		counts[SectionApprovals] = s.h.approvalsWaiting()
	}
	return sectionsOf(counts)
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
		s.h.log.Info("window frontend ready")
	}
}

// Status returns the current status line.
func (s *Shell) Status() string {
	if s.h == nil {
		return ""
	}
	return s.h.status.Text()
}

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
