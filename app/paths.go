package app

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
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

// ResolvePaths returns Poppydesk's directories for env without touching the disk. The paths are
// those of env.GOOS, whatever system runs the call (the tests check every platform's rules on
// each).
//
// On Linux and the BSDs it follows the XDG Base Directory specification: $XDG_DATA_HOME
// (default ~/.local/share), $XDG_CONFIG_HOME (default ~/.config) and $XDG_STATE_HOME (default
// ~/.local/state), each with a "poppydesk" folder. Relative XDG values are ignored, as the
// specification requires. On macOS everything is under ~/Library/Application Support/poppydesk
// (logs in ~/Library/Logs/poppydesk), as Apple's File System Programming Guide places app data
// and logs. On Windows the data is under %LocalAppData%\poppydesk (logs in its logs folder) and
// the settings under %AppData%\poppydesk, which roams with the user's profile, as
// os.UserCacheDir and os.UserConfigDir choose them; relative values are refused.
func ResolvePaths(env Env) (Paths, error) {
	get := func(k string) string {
		if env.Getenv == nil {
			return ""
		}
		return env.Getenv(k)
	}
	if env.GOOS == "windows" {
		local, roaming := get("LocalAppData"), get("AppData")
		if !windowsAbs(local) || !windowsAbs(roaming) {
			return Paths{}, fmt.Errorf("%%LocalAppData%% (%q) or %%AppData%% (%q) is not set to an absolute path; Poppydesk cannot choose where to keep its data. Sign in to Windows with a user profile, or set both", local, roaming)
		}
		return Paths{
			Data:   windowsJoin(local, AppDirName),
			Config: windowsJoin(roaming, AppDirName),
			State:  windowsJoin(local, AppDirName, "logs"),
		}, nil
	}
	// Every other system Go runs a desktop on uses slash-separated paths.
	xdg := func(k string, def ...string) (string, error) {
		if v := get(k); v != "" && path.IsAbs(v) {
			return path.Join(v, AppDirName), nil
		}
		if !path.IsAbs(env.Home) {
			return "", errors.New("the home directory is unknown and $" + k + " is not set to an absolute path; set $HOME or $" + k)
		}
		return path.Join(append(append([]string{env.Home}, def...), AppDirName)...), nil
	}
	switch env.GOOS {
	case "darwin", "ios":
		if !path.IsAbs(env.Home) {
			return Paths{}, errors.New("the home directory is unknown; set $HOME")
		}
		support := path.Join(env.Home, "Library", "Application Support", AppDirName)
		return Paths{Data: support, Config: support, State: path.Join(env.Home, "Library", "Logs", AppDirName)}, nil
	default:
		var p Paths
		var err error
		if p.Data, err = xdg("XDG_DATA_HOME", ".local", "share"); err != nil {
			return Paths{}, err
		}
		if p.Config, err = xdg("XDG_CONFIG_HOME", ".config"); err != nil {
			return Paths{}, err
		}
		if p.State, err = xdg("XDG_STATE_HOME", ".local", "state"); err != nil {
			return Paths{}, err
		}
		return p, nil
	}
}

// windowsAbs reports whether p is an absolute Windows path: a drive letter with a separator
// (C:\Users) or a UNC path (\\server\share).
func windowsAbs(p string) bool {
	switch {
	case len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') && ('a' <= p[0]|0x20 && p[0]|0x20 <= 'z'):
		return true
	case len(p) >= 3 && (p[0] == '\\' || p[0] == '/') && (p[1] == '\\' || p[1] == '/'):
		return true
	}
	return false
}

// windowsJoin joins Windows path elements with backslashes, as filepath.Join does on Windows.
// windowsAbs and windowsJoin exist because path/filepath follows the running system only, and
// ResolvePaths gives every platform's paths on any.
func windowsJoin(base string, elem ...string) string {
	return strings.TrimRight(base, `\/`) + `\` + strings.Join(elem, `\`)
}

// Create makes the directories, readable only by the user: mode 0700 on Unix systems. On
// Windows mode bits do not apply; the folders inherit the access list of the user's profile
// (%LocalAppData% and %AppData% are the user's, SYSTEM's and the Administrators').
func (p Paths) Create() error {
	for _, d := range []string{p.Data, p.Config, p.State} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating Poppydesk's directory %s failed: %w; check the permissions of the folder it is in", d, err)
		}
	}
	return nil
}
