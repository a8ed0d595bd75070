package fronts

// The Settings screen's service. Its sections are independent: developer mode
// (app/host_devmode.go), the identity in use (enrolling with an operator: settings_identity.go),
// and where files live; each is one field of SettingsView.

import (
	"context"
	"time"

	"github.com/poppydesk/poppydesk/app"
)

// Settings is the window's service for the Settings screen.
type Settings struct{ h *app.Host }

// DeveloperView is developer mode: what the running Host applies and what is saved for the next
// start.
type DeveloperView struct {
	// Active is what this run applies (shown in the header's badge).
	Active bool `json:"active"`
	// Companies, Hosts and CAFile are the running developer mode.
	Companies []string `json:"companies"`
	Hosts     []string `json:"hosts"`
	CAFile    string   `json:"ca_file"`
	// ClientID is the client_id to register at the Company, served by Poppydesk itself on
	// loopback, and AgentCAFile the CA the Company must trust to fetch it.
	ClientID    string `json:"client_id"`
	AgentCAFile string `json:"agent_ca_file"`
	// Saved is what the state database holds for the next start.
	SavedCompanies []string `json:"saved_companies"`
	SavedCAFile    string   `json:"saved_ca_file"`
	// RestartNeeded is set when the saved settings differ from the running ones.
	RestartNeeded bool `json:"restart_needed"`
	// Problem says why saved settings could not be applied.
	Problem string `json:"problem"`
	// Demo is set in the demo, where the reference Company's hosts are developer mode.
	Demo bool `json:"demo"`
}

// IdentityView is the identity in use (spec 4.1).
type IdentityView struct {
	ClientID string `json:"client_id"`
	Keyring  string `json:"keyring"`
	Problem  string `json:"problem"`
}

// FilesView says where Poppydesk keeps its files.
type FilesView struct {
	Data     string `json:"data"`
	Config   string `json:"config"`
	State    string `json:"state"`
	Database string `json:"database"`
	Log      string `json:"log"`
	Socket   string `json:"socket"`
}

// SettingsView is the Settings screen.
type SettingsView struct {
	Developer DeveloperView `json:"developer"`
	Identity  IdentityView  `json:"identity"`
	Files     FilesView     `json:"files"`
	Version   string        `json:"version"`
}

// settingsCall bounds one call of the Settings screen (enrollments have their own bound).
const settingsCall = 10 * time.Second

// ctx is a call's context. Settings work while the engine does not run; a service without a
// Host answers its Refusal.
func (s *Settings) ctx(d time.Duration) (context.Context, context.CancelFunc, error) {
	if s.h == nil {
		return nil, nil, s.h.Refusal()
	}
	ctx, cancel := context.WithTimeout(s.h.Context(), d)
	return ctx, cancel, nil
}

// View returns the Settings screen.
func (s *Settings) View() (SettingsView, error) {
	ctx, cancel, err := s.ctx(settingsCall)
	if err != nil {
		return SettingsView{}, err
	}
	defer cancel()
	return s.view(ctx), nil
}

func (s *Settings) view(ctx context.Context) SettingsView {
	d, a := s.h.DeveloperMode(ctx), s.h.About()
	v := SettingsView{Version: a.Version,
		Developer: DeveloperView{Active: d.Running.On(), Companies: nonNilStrings(d.Running.Companies), Hosts: nonNilStrings(d.Running.Hosts),
			CAFile: d.Running.CAFile, ClientID: d.ClientID, AgentCAFile: d.AgentCAFile, SavedCompanies: nonNilStrings(d.Saved.Companies),
			SavedCAFile: d.Saved.CAFile, RestartNeeded: d.RestartNeeded, Problem: d.Problem, Demo: d.Demo},
		Identity: IdentityView{ClientID: a.ClientID, Keyring: a.Keyring},
		Files: FilesView{Data: a.Paths.Data, Config: a.Paths.Config, State: a.Paths.State, Database: a.StateFile, Log: a.Paths.LogFile(),
			Socket: a.Socket}}
	if p := s.h.Problem(); p != nil {
		v.Identity.Problem = p.Text
	}
	if d.Demo {
		v.Files.Database = "(the demo's throwaway database)"
	}
	return v
}

// SetDeveloper saves developer mode for the Companies named by domain (host[:port], loopback
// names only) with the CA file trusted for their hosts only ([app.Host.SetDeveloper]). It takes
// effect when Poppydesk starts again (RestartNeeded says so). Refused, and nothing saved, for a
// name that is not a loopback name or a CA file that does not parse.
func (s *Settings) SetDeveloper(companies []string, caFile string) (SettingsView, error) {
	ctx, cancel, err := s.ctx(settingsCall)
	if err != nil {
		return SettingsView{}, err
	}
	defer cancel()
	if err := s.h.SetDeveloper(ctx, companies, caFile); err != nil {
		return SettingsView{}, err
	}
	return s.view(ctx), nil
}

// DisableDeveloper turns developer mode off (at the next start): no host under development,
// no CA trusted.
func (s *Settings) DisableDeveloper() (SettingsView, error) {
	ctx, cancel, err := s.ctx(settingsCall)
	if err != nil {
		return SettingsView{}, err
	}
	defer cancel()
	if err := s.h.DisableDeveloper(ctx); err != nil {
		return SettingsView{}, err
	}
	return s.view(ctx), nil
}
