package app

// The Settings screen's service. Its sections are independent: developer mode (host_devmode.go),
// the identity in use (enrolling with an operator: settings_identity.go), and where files live;
// each is one field of SettingsView.

import (
	"context"
	"path/filepath"
	"slices"
	"time"
)

// Settings is the window's service for the Settings screen.
type Settings struct{ h *Host }

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

// View returns the Settings screen.
func (s *Settings) View() (SettingsView, error) {
	if s.h == nil {
		return SettingsView{}, errNotConnected
	}
	ctx, cancel := context.WithTimeout(s.h.Context(), 10*time.Second)
	defer cancel()
	return s.h.settingsView(ctx), nil
}

func (h *Host) settingsView(ctx context.Context) SettingsView {
	d := h.cfg.Developer
	if h.demo != nil {
		d = h.demo.developer()
	}
	dv := DeveloperView{Active: d.On(), Companies: nonNilStrings(d.Companies), Hosts: nonNilStrings(d.Hosts), CAFile: d.CAFile,
		ClientID: h.DevClientID(), AgentCAFile: h.DevCAFile(), Problem: h.devProblem, Demo: h.demo != nil,
		SavedCompanies: []string{}}
	if h.state != nil {
		if saved, err := LoadDeveloperSettings(ctx, h.state); err == nil {
			dv.SavedCompanies, dv.SavedCAFile = nonNilStrings(saved.Companies), saved.CAFile
			if h.demo == nil {
				dv.RestartNeeded = !slices.Equal(saved.Companies, h.devSaved.Companies) || saved.CAFile != h.devSaved.CAFile
			}
		} else {
			dv.Problem = err.Error()
		}
	}
	v := SettingsView{Developer: dv, Version: h.cfg.Version,
		Identity: IdentityView{ClientID: h.clientID, Keyring: h.keyring},
		Files: FilesView{Data: h.cfg.Paths.Data, Config: h.cfg.Paths.Config, State: h.cfg.Paths.State,
			Database: filepath.Join(h.cfg.Paths.Data, StateFile), Log: h.cfg.Paths.LogFile(), Socket: h.Socket()}}
	if h.problem != nil {
		v.Identity.Problem = h.problem.Text
	}
	if h.demo != nil {
		v.Files.Database = "(the demo's throwaway database)"
	}
	return v
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// SetDeveloper saves developer mode for the Companies named by domain (host[:port], loopback
// names only) with the CA file trusted for their hosts only. It takes effect when Poppydesk
// starts again (RestartNeeded says so). Refused, and nothing saved, for a name that is not a
// loopback name or a CA file that does not parse.
func (s *Settings) SetDeveloper(companies []string, caFile string) (SettingsView, error) {
	if s.h == nil {
		return SettingsView{}, errNotConnected
	}
	ctx, cancel := context.WithTimeout(s.h.Context(), 10*time.Second)
	defer cancel()
	var clean []string
	for _, c := range companies {
		if c != "" {
			clean = append(clean, c)
		}
	}
	ds := DeveloperSettings{Companies: clean, CAFile: caFile}
	saved, _ := LoadDeveloperSettings(ctx, s.h.state)
	ds.AgentListen = saved.AgentListen
	if ds.AgentListen == "" && s.h.agentSrv != nil {
		ds.AgentListen = s.h.devSaved.AgentListen
	}
	if _, err := DeveloperFrom(ds); err != nil {
		return SettingsView{}, err
	}
	if err := SaveDeveloperSettings(ctx, s.h.state, ds); err != nil {
		return SettingsView{}, err
	}
	s.h.log.Info("developer mode saved for the next start", "companies", ds.Companies, "ca_file", ds.CAFile)
	return s.h.settingsView(ctx), nil
}

// DisableDeveloper turns developer mode off (at the next start): no host under development,
// no CA trusted.
func (s *Settings) DisableDeveloper() (SettingsView, error) {
	if s.h == nil {
		return SettingsView{}, errNotConnected
	}
	ctx, cancel := context.WithTimeout(s.h.Context(), 10*time.Second)
	defer cancel()
	if err := SaveDeveloperSettings(ctx, s.h.state, DeveloperSettings{}); err != nil {
		return SettingsView{}, err
	}
	return s.h.settingsView(ctx), nil
}
