package app

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestResolvePaths(t *testing.T) {
	envOf := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name    string
		env     Env
		want    Paths
		wantErr string
	}{
		{
			name: "linux defaults follow XDG",
			env:  Env{GOOS: "linux", Home: "/home/ada", Getenv: envOf(nil)},
			want: Paths{Data: "/home/ada/.local/share/poppydesk", Config: "/home/ada/.config/poppydesk", State: "/home/ada/.local/state/poppydesk"},
		},
		{
			name: "linux XDG variables win",
			env: Env{GOOS: "linux", Home: "/home/ada", Getenv: envOf(map[string]string{
				"XDG_DATA_HOME": "/d", "XDG_CONFIG_HOME": "/c", "XDG_STATE_HOME": "/s",
			})},
			want: Paths{Data: "/d/poppydesk", Config: "/c/poppydesk", State: "/s/poppydesk"},
		},
		{
			name: "relative XDG values are ignored as the specification says",
			env:  Env{GOOS: "freebsd", Home: "/home/ada", Getenv: envOf(map[string]string{"XDG_DATA_HOME": "rel/dir"})},
			want: Paths{Data: "/home/ada/.local/share/poppydesk", Config: "/home/ada/.config/poppydesk", State: "/home/ada/.local/state/poppydesk"},
		},
		{
			name:    "linux without home or XDG fails with advice",
			env:     Env{GOOS: "linux", Getenv: envOf(nil)},
			wantErr: "set $HOME or $XDG_DATA_HOME",
		},
		{
			name: "macOS",
			env:  Env{GOOS: "darwin", Home: "/Users/ada"},
			want: Paths{
				Data:   "/Users/ada/Library/Application Support/poppydesk",
				Config: "/Users/ada/Library/Application Support/poppydesk",
				State:  "/Users/ada/Library/Logs/poppydesk",
			},
		},
		{
			name: "macOS ignores XDG variables",
			env:  Env{GOOS: "darwin", Home: "/Users/ada", Getenv: envOf(map[string]string{"XDG_DATA_HOME": "/d"})},
			want: Paths{
				Data:   "/Users/ada/Library/Application Support/poppydesk",
				Config: "/Users/ada/Library/Application Support/poppydesk",
				State:  "/Users/ada/Library/Logs/poppydesk",
			},
		},
		{
			name:    "macOS without home fails with advice",
			env:     Env{GOOS: "darwin"},
			wantErr: "set $HOME",
		},
		{
			name: "windows: data and logs local, settings roaming",
			env: Env{GOOS: "windows", Home: `C:\Users\ada`, Getenv: envOf(map[string]string{
				"LocalAppData": `C:\Users\ada\AppData\Local`, "AppData": `C:\Users\ada\AppData\Roaming\`,
				"XDG_DATA_HOME": "/d",
			})},
			want: Paths{
				Data:   `C:\Users\ada\AppData\Local\poppydesk`,
				Config: `C:\Users\ada\AppData\Roaming\poppydesk`,
				State:  `C:\Users\ada\AppData\Local\poppydesk\logs`,
			},
		},
		{
			name: "windows: a profile on a network share",
			env:  Env{GOOS: "windows", Getenv: envOf(map[string]string{"LocalAppData": `\\srv\home\ada\Local`, "AppData": `\\srv\home\ada\Roaming`})},
			want: Paths{Data: `\\srv\home\ada\Local\poppydesk`, Config: `\\srv\home\ada\Roaming\poppydesk`, State: `\\srv\home\ada\Local\poppydesk\logs`},
		},
		{
			name:    "windows without AppData",
			env:     Env{GOOS: "windows", Getenv: envOf(map[string]string{"LocalAppData": `C:\L`})},
			wantErr: "%AppData%",
		},
		{
			name:    "windows with a relative LocalAppData",
			env:     Env{GOOS: "windows", Getenv: envOf(map[string]string{"LocalAppData": `AppData\Local`, "AppData": `C:\R`})},
			wantErr: "not set to an absolute path",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolvePaths(tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestResolvePathsOfThisSystem: for the running system, the settings folder is in the one
// os.UserConfigDir names (%AppData% on Windows, ~/Library/Application Support on macOS,
// $XDG_CONFIG_HOME or ~/.config elsewhere), and on Windows the data folder in the one
// os.UserCacheDir names (%LocalAppData%).
func TestResolvePathsOfThisSystem(t *testing.T) {
	env, err := OSEnv(runtime.GOOS)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ResolvePaths(env)
	if err != nil {
		t.Fatal(err)
	}
	config, err := os.UserConfigDir()
	if err != nil {
		t.Skipf("os.UserConfigDir: %v (a relative XDG_CONFIG_HOME, which ResolvePaths ignores)", err)
	}
	if want := filepath.Join(config, AppDirName); p.Config != want {
		t.Errorf("Config = %s, want %s", p.Config, want)
	}
	if runtime.GOOS == "windows" {
		local, _ := os.UserCacheDir()
		if want := filepath.Join(local, AppDirName); p.Data != want {
			t.Errorf("Data = %s, want %s", p.Data, want)
		}
	}
}

func TestPathsCreateIsPrivate(t *testing.T) {
	root := t.TempDir()
	p := Paths{Data: filepath.Join(root, "d", "poppydesk"), Config: filepath.Join(root, "c", "poppydesk"), State: filepath.Join(root, "s", "poppydesk")}
	if err := p.Create(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{p.Data, p.Config, p.State} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		// Windows has no mode bits (os.Stat reports 0777 for every folder); there the folders
		// inherit the user profile's access list.
		if perm := st.Mode().Perm(); perm != 0o700 && runtime.GOOS != "windows" {
			t.Errorf("%s has mode %o, want 0700", d, perm)
		}
	}
	if got, want := p.LogFile(), filepath.Join(p.State, "poppydesk.log"); got != want {
		t.Errorf("LogFile() = %s, want %s", got, want)
	}
}
