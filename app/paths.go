package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// AppDirName is the folder name Poppydesk uses inside the per-user data, config and state
// directories.
const AppDirName = "poppydesk"

// Paths are the per-user directories of Poppydesk.
type Paths struct {
	// Data holds durable non-secret state (the SQLite database). Secrets never go here.
	Data string `json:"data"`
	// Config holds the user's settings.
	Config string `json:"config"`
	// State holds logs and other state that can be lost without harm.
	State string `json:"state"`
}

// LogFile is the path of the current log file.
func (p Paths) LogFile() string { return filepath.Join(p.State, "poppydesk.log") }

// Env is the part of the process environment that [ResolvePaths] reads.
type Env struct {
	GOOS   string
	Getenv func(string) string
	Home   string
}

// OSEnv returns the environment of the running process.
func OSEnv(goos string) (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("finding the home directory for Poppydesk's data failed: %w; set $HOME", err)
	}
	return Env{GOOS: goos, Getenv: os.Getenv, Home: home}, nil
}

// ResolvePaths returns Poppydesk's directories for env without touching the disk.
//
// On Linux and the BSDs it follows the XDG Base Directory specification: $XDG_DATA_HOME
// (default ~/.local/share), $XDG_CONFIG_HOME (default ~/.config) and $XDG_STATE_HOME (default
// ~/.local/state), each with a "poppydesk" folder. Relative XDG values are ignored, as the
// specification requires. On macOS everything is under ~/Library/Application Support/poppydesk
// (logs in ~/Library/Logs/poppydesk); on Windows under %LocalAppData%\poppydesk (settings in
// %AppData%\poppydesk), like os.UserConfigDir.
func ResolvePaths(env Env) (Paths, error) {
	get := func(k string) string {
		if env.Getenv == nil {
			return ""
		}
		return env.Getenv(k)
	}
	xdg := func(k, def string) (string, error) {
		if v := get(k); v != "" && filepath.IsAbs(v) {
			return filepath.Join(v, AppDirName), nil
		}
		if env.Home == "" {
			return "", errors.New("the home directory is unknown and $" + k + " is not set to an absolute path; set $HOME or $" + k)
		}
		return filepath.Join(env.Home, def, AppDirName), nil
	}
	switch env.GOOS {
	case "windows":
		local, roaming := get("LocalAppData"), get("AppData")
		if local == "" || roaming == "" {
			return Paths{}, errors.New("%LocalAppData% or %AppData% is not set; Poppydesk cannot choose where to keep its data")
		}
		return Paths{
			Data:   filepath.Join(local, AppDirName),
			Config: filepath.Join(roaming, AppDirName),
			State:  filepath.Join(local, AppDirName, "logs"),
		}, nil
	case "darwin", "ios":
		if env.Home == "" {
			return Paths{}, errors.New("the home directory is unknown; set $HOME")
		}
		support := filepath.Join(env.Home, "Library", "Application Support", AppDirName)
		return Paths{Data: support, Config: support, State: filepath.Join(env.Home, "Library", "Logs", AppDirName)}, nil
	default:
		var p Paths
		var err error
		if p.Data, err = xdg("XDG_DATA_HOME", filepath.Join(".local", "share")); err != nil {
			return Paths{}, err
		}
		if p.Config, err = xdg("XDG_CONFIG_HOME", ".config"); err != nil {
			return Paths{}, err
		}
		if p.State, err = xdg("XDG_STATE_HOME", filepath.Join(".local", "state")); err != nil {
			return Paths{}, err
		}
		return p, nil
	}
}

// Create makes the directories (mode 0700: only the user may read Poppydesk's data).
func (p Paths) Create() error {
	for _, d := range []string{p.Data, p.Config, p.State} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating Poppydesk's directory %s failed: %w; check its permissions or set the XDG_* variables", d, err)
		}
	}
	return nil
}
