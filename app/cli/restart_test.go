package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/app"
)

// TestRestartArgs: what the program starts as after a restart from the window. Get started keeps
// the command line; the demo keeps the user's command line aside, which leaving the demo starts
// again; the previous restart's markers never pile up.
func TestRestartArgs(t *testing.T) {
	base := []string{"HOME=/home/me", "DISPLAY=:0"}
	tests := []struct {
		name     string
		to       app.RestartTo
		args     []string
		environ  []string
		wantArgs []string
		wantEnv  []string
	}{
		{"ready keeps the command line", app.RestartReady, []string{"--debug"}, base,
			[]string{"--debug"}, append(slices.Clone(base), envRestarted+"=ready")},
		{"the demo keeps the user's command line aside", app.RestartDemo, []string{"--dev-company", "shop.localhost"}, base,
			[]string{"demo"}, append(slices.Clone(base), envRestarted+"=demo", envReturnArgs+`=["--dev-company","shop.localhost"]`)},
		{"leaving the demo starts the user's command line", app.RestartHome, []string{"demo"},
			append(slices.Clone(base), envRestarted+"=demo", envReturnArgs+`=["--dev-company","shop.localhost"]`),
			[]string{"--dev-company", "shop.localhost"}, append(slices.Clone(base), envRestarted+"=home")},
		{"leaving a demo started without arguments", app.RestartHome, []string{"demo"},
			append(slices.Clone(base), envRestarted+"=demo", envReturnArgs+`=[]`), []string{}, append(slices.Clone(base), envRestarted+"=home")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				for _, kv := range tc.environ {
					if v, ok := strings.CutPrefix(kv, k+"="); ok {
						return v
					}
				}
				return ""
			}
			args, env, err := restartArgs(tc.to, tc.args, tc.environ, getenv)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(args, tc.wantArgs) || !slices.Equal(env, tc.wantEnv) {
				t.Errorf("restartArgs = %q, %q; want %q, %q", args, env, tc.wantArgs, tc.wantEnv)
			}
		})
	}
	if _, _, err := restartArgs(app.RestartHome, nil, []string{envReturnArgs + "=not json"}, func(string) string { return "not json" }); err == nil {
		t.Error("an unreadable command line to go back to was accepted")
	}
	if _, _, err := restartArgs("elsewhere", nil, nil, func(string) string { return "" }); err == nil {
		t.Error("an unknown restart was accepted")
	}
}
