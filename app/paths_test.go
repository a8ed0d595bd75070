package app

import (
	"os"
	"path/filepath"
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
			name: "windows",
			env:  Env{GOOS: "windows", Getenv: envOf(map[string]string{"LocalAppData": `/L`, "AppData": `/R`})},
			want: Paths{Data: filepath.Join("/L", "poppydesk"), Config: filepath.Join("/R", "poppydesk"), State: filepath.Join("/L", "poppydesk", "logs")},
		},
		{
			name:    "windows without AppData",
			env:     Env{GOOS: "windows", Getenv: envOf(nil)},
			wantErr: "%AppData% is not set",
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
		if perm := st.Mode().Perm(); perm != 0o700 {
			t.Errorf("%s has mode %o, want 0700", d, perm)
		}
	}
	if got, want := p.LogFile(), filepath.Join(p.State, "poppydesk.log"); got != want {
		t.Errorf("LogFile() = %s, want %s", got, want)
	}
}
