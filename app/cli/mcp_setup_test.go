package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// setupCommand is the program path the tests write (an installed binary's absolute path).
const setupCommand = "/usr/bin/poppydesk"

// documentedClient is each client's file and format as its documentation gives it, written out
// here independently of mcp_setup.go's table.
type documentedClient struct {
	name string
	// path is the file under HOME for GOOS linux without XDG_CONFIG_HOME, and for darwin.
	linux, darwin string
	key           string // the top-level key holding the servers
	entry         string // the exact entry for setupCommand
}

var documentedClients = []documentedClient{
	{name: "claude-code", linux: ".claude.json", darwin: ".claude.json", key: "mcpServers",
		entry: `{"type":"stdio","command":"/usr/bin/poppydesk","args":["mcp"],"env":{}}`},
	{name: "claude-desktop", linux: ".config/Claude/claude_desktop_config.json",
		darwin: "Library/Application Support/Claude/claude_desktop_config.json", key: "mcpServers",
		entry: `{"command":"/usr/bin/poppydesk","args":["mcp"]}`},
	{name: "vscode", linux: ".config/Code/User/mcp.json", darwin: "Library/Application Support/Code/User/mcp.json", key: "servers",
		entry: `{"type":"stdio","command":"/usr/bin/poppydesk","args":["mcp"]}`},
	{name: "cursor", linux: ".cursor/mcp.json", darwin: ".cursor/mcp.json", key: "mcpServers",
		entry: `{"command":"/usr/bin/poppydesk","args":["mcp"]}`},
}

// setupEnv is an Env for `mcp setup` with HOME at home and only the variables in vars.
func setupEnv(home, goos string, stdin string, vars map[string]string) Env {
	return Env{Version: "test", GOOS: goos, Home: home, Stdin: strings.NewReader(stdin),
		Getenv: func(k string) string { return vars[k] }, Executable: setupCommand}
}

// orderedKeys returns the keys of the JSON object raw, in order.
func orderedKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	o, err := parseJSONObject(raw)
	if err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, raw)
	}
	return o.keys
}

// decode decodes JSON with numbers kept as written.
func decode(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, raw)
	}
	return v
}

// checkEntry checks that file has exactly the documented entry under key/poppydesk, and returns
// the file's top-level object.
func checkEntry(t *testing.T, file string, c documentedClient) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the configuration file was not written: %v", err)
	}
	top := decode(t, raw).(map[string]any)
	servers, ok := top[c.key].(map[string]any)
	if !ok {
		t.Fatalf("%s has no %q object:\n%s", file, c.key, raw)
	}
	got, _ := json.Marshal(servers["poppydesk"])
	if !reflect.DeepEqual(decode(t, got), decode(t, []byte(c.entry))) {
		t.Errorf("entry = %s, want the documented %s", got, c.entry)
	}
	// The exact keys, in the documented order.
	o, _ := parseJSONObject(raw)
	so, _ := parseJSONObject(o.vals[c.key])
	if keys, want := orderedKeys(t, so.vals["poppydesk"]), orderedKeys(t, []byte(c.entry)); !reflect.DeepEqual(keys, want) {
		t.Errorf("entry keys = %v, want %v", keys, want)
	}
	return top
}

func backups(t *testing.T, file string) []string {
	t.Helper()
	m, err := filepath.Glob(file + ".bak-*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMCPSetupWritesEachClientsDocumentedFormat(t *testing.T) {
	for _, c := range documentedClients {
		for _, goos := range []string{"linux", "darwin"} {
			t.Run(c.name+"/"+goos, func(t *testing.T) {
				home := t.TempDir()
				file := filepath.Join(home, c.linux)
				if goos == "darwin" {
					file = filepath.Join(home, c.darwin)
				}
				code, out, errOut := runCLI(t, setupEnv(home, goos, "", nil), "mcp", "setup", c.name, "--yes")
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				if !strings.Contains(out, "+++ "+file) || !strings.Contains(out, `+      "command": "/usr/bin/poppydesk"`) {
					t.Errorf("the preview does not show the new file and its entry:\n%s", out)
				}
				top := checkEntry(t, file, c)
				if len(top) != 1 {
					t.Errorf("a new file has only %q, got %v", c.key, top)
				}
				if b := backups(t, file); len(b) != 0 {
					t.Errorf("a backup of a file that did not exist: %v", b)
				}
				if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
					t.Errorf("a new file's mode is %v, want 0600", st.Mode().Perm())
				}

				// Idempotent: a second run says so and writes nothing.
				before, _ := os.ReadFile(file)
				st1, _ := os.Stat(file)
				code, out, errOut = runCLI(t, setupEnv(home, goos, "", nil), "mcp", "setup", c.name, "--yes")
				if code != 0 || !strings.Contains(out, "already set up") {
					t.Errorf("second run: exit %d, stdout %q, stderr %q; want \"already set up\"", code, out, errOut)
				}
				after, _ := os.ReadFile(file)
				st2, _ := os.Stat(file)
				if !bytes.Equal(before, after) || !st1.ModTime().Equal(st2.ModTime()) {
					t.Error("the second run rewrote the file")
				}
				if b := backups(t, file); len(b) != 0 {
					t.Errorf("the second run made a backup: %v", b)
				}
			})
		}
	}
}

func TestMCPSetupKeepsEveryOtherKey(t *testing.T) {
	for _, c := range documentedClients {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			file := filepath.Join(home, c.linux)
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			// Keys before and after the servers, another server, numbers that a float64 round
			// trip would change, HTML characters, non-ASCII text, tab indentation (VS Code's).
			original := "{\n\t\"zeta\": {\"n\": 1.50, \"big\": 12345678901234567890},\n\t\"" + c.key + "\": {\n\t\t\"other\": {\"command\": \"other-server\", \"args\": [\"--x\"], \"url\": \"https://a.example/?a=1&b=<2>\"}\n\t},\n\t\"alpha\": [true, null, \"é\"]\n}\n"
			if err := os.WriteFile(file, []byte(original), 0o640); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI(t, setupEnv(home, "linux", "", nil), "mcp", "setup", c.name, "--yes")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "--- "+file) || !strings.Contains(out, "+\t\t\"poppydesk\": {") {
				t.Errorf("the preview is not a diff of the file:\n%s", out)
			}
			top := checkEntry(t, file, c)
			raw, _ := os.ReadFile(file)
			if keys := orderedKeys(t, raw); !reflect.DeepEqual(keys, []string{"zeta", c.key, "alpha"}) {
				t.Errorf("top-level keys = %v, want their old order", keys)
			}
			wantTop := decode(t, []byte(original)).(map[string]any)
			for k, v := range wantTop {
				if k == c.key {
					continue
				}
				if !reflect.DeepEqual(top[k], v) {
					t.Errorf("%q = %v, want it unchanged (%v)", k, top[k], v)
				}
			}
			if other := top[c.key].(map[string]any)["other"]; !reflect.DeepEqual(other, wantTop[c.key].(map[string]any)["other"]) {
				t.Errorf("the other server became %v", other)
			}
			for _, s := range []string{"1.50", "12345678901234567890", `"https://a.example/?a=1&b=<2>"`, "\"é\"", "\n\t\"zeta\""} {
				if !strings.Contains(string(raw), s) {
					t.Errorf("the file lost %s as written:\n%s", s, raw)
				}
			}
			b := backups(t, file)
			if len(b) != 1 {
				t.Fatalf("backups = %v, want one", b)
			}
			if kept, _ := os.ReadFile(b[0]); string(kept) != original {
				t.Errorf("the backup is not the old file: %q", kept)
			}
			if !strings.HasPrefix(filepath.Base(b[0]), filepath.Base(file)+".bak-2") || len(filepath.Base(b[0])) != len(filepath.Base(file))+len(".bak-20060102150405") {
				t.Errorf("backup name %s is not FILE.bak-YYYYMMDDhhmmss", b[0])
			}
			if st, _ := os.Stat(file); st.Mode().Perm() != 0o640 {
				t.Errorf("the file's mode became %v, want 0640 as before", st.Mode().Perm())
			}
		})
	}
}

func TestMCPSetupRefusesWhatItCannotKeep(t *testing.T) {
	cases := []struct {
		name, content, want string
	}{
		{"trailing comma", `{"mcpServers": {},}`, "not valid JSON"},
		{"comment", "{\n  // my servers\n  \"servers\": {}\n}", "not valid JSON"},
		{"truncated", `{"mcpServers": {"a": `, "not valid JSON"},
		{"array", `[1, 2]`, "not valid JSON (the top level is not an object)"},
		{"two objects", `{} {}`, "more after the object"},
		{"duplicate key", `{"a": 1, "a": 2}`, `"a" appears twice`},
		{"servers not an object", `{"mcpServers": [], "servers": []}`, "it is not a JSON object"},
	}
	for _, c := range documentedClients {
		for _, tc := range cases {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				home := t.TempDir()
				file := filepath.Join(home, c.linux)
				os.MkdirAll(filepath.Dir(file), 0o755)
				if err := os.WriteFile(file, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
				code, out, errOut := runCLI(t, setupEnv(home, "linux", "", nil), "mcp", "setup", c.name, "--yes")
				if code != 1 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "left it unchanged") {
					t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, tc.want)
				}
				if !strings.Contains(errOut, `"poppydesk": {`) || !strings.Contains(errOut, setupCommand) {
					t.Errorf("the refusal does not give the entry to add by hand: %q", errOut)
				}
				if strings.Contains(out, "Wrote") {
					t.Errorf("stdout says it wrote: %q", out)
				}
				if got, _ := os.ReadFile(file); string(got) != tc.content {
					t.Errorf("the file was changed to %q", got)
				}
				if b := backups(t, file); len(b) != 0 {
					t.Errorf("backups of a refused file: %v", b)
				}
			})
		}
	}
}

func TestMCPSetupAsksFirst(t *testing.T) {
	c := documentedClients[0]
	cases := []struct {
		stdin   string
		code    int
		written bool
		say     string
	}{
		{"y\n", 0, true, "Wrote "},
		{"YES\n", 0, true, "Wrote "},
		{"n\n", 0, false, "Nothing was written."},
		{"\n", 0, false, "Nothing was written."},
		{"", 1, false, "no answer on standard input"},
	}
	for _, tc := range cases {
		t.Run(strings.TrimSpace(tc.stdin), func(t *testing.T) {
			home := t.TempDir()
			code, out, errOut := runCLI(t, setupEnv(home, "linux", tc.stdin, nil), "mcp", "setup", c.name)
			if code != tc.code || !strings.Contains(out+errOut, tc.say) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, tc.code, tc.say)
			}
			if !strings.Contains(out, "? [y/N] ") {
				t.Errorf("no question asked: %q", out)
			}
			_, err := os.Stat(filepath.Join(home, c.linux))
			if written := err == nil; written != tc.written {
				t.Errorf("written = %v, want %v", written, tc.written)
			}
		})
	}
}

func TestMCPSetupUpdatesAnOldEntryAndKeepsItsExtras(t *testing.T) {
	c := documentedClients[0] // claude-code: "env" is kept as the user filled it
	home := t.TempDir()
	file := filepath.Join(home, c.linux)
	old := `{"mcpServers": {"poppydesk": {"type": "stdio", "command": "/home/me/src/poppydesk/build/bin/poppydesk", "args": ["mcp"], "env": {"POPPYDESK_KEYRING_SERVICE": "mine"}, "timeout": 30}}}`
	if err := os.WriteFile(file, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, setupEnv(home, "linux", "", nil), "mcp", "setup", c.name, "--yes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `-      "command": "/home/me/src/poppydesk/build/bin/poppydesk",`) || !strings.Contains(out, `+      "command": "/usr/bin/poppydesk",`) {
		t.Errorf("the preview does not show the command changing:\n%s", out)
	}
	raw, _ := os.ReadFile(file)
	entry := decode(t, raw).(map[string]any)["mcpServers"].(map[string]any)["poppydesk"].(map[string]any)
	if entry["command"] != setupCommand {
		t.Errorf("command = %v", entry["command"])
	}
	if env, _ := json.Marshal(entry["env"]); string(env) != `{"POPPYDESK_KEYRING_SERVICE":"mine"}` || entry["timeout"] == nil {
		t.Errorf("the entry lost the user's keys: %v", entry)
	}
	code, out, _ = runCLI(t, setupEnv(home, "linux", "", nil), "mcp", "setup", c.name, "--yes")
	if code != 0 || !strings.Contains(out, "already set up") {
		t.Errorf("after the update, a run should find it set up: %q", out)
	}
}

func TestMCPSetupPaths(t *testing.T) {
	home := t.TempDir()
	xdg := filepath.Join(home, "xdg-config")
	cases := []struct {
		client string
		goos   string
		vars   map[string]string
		want   string
	}{
		{"claude-desktop", "linux", map[string]string{"XDG_CONFIG_HOME": xdg}, filepath.Join(xdg, "Claude", "claude_desktop_config.json")},
		{"vscode", "linux", map[string]string{"XDG_CONFIG_HOME": xdg}, filepath.Join(xdg, "Code", "User", "mcp.json")},
		{"vscode", "linux", map[string]string{"XDG_CONFIG_HOME": "relative/ignored"}, filepath.Join(home, ".config", "Code", "User", "mcp.json")},
		{"cursor", "linux", map[string]string{"XDG_CONFIG_HOME": xdg}, filepath.Join(home, ".cursor", "mcp.json")},
		{"claude-code", "linux", map[string]string{"XDG_CONFIG_HOME": xdg}, filepath.Join(home, ".claude.json")},
	}
	for _, tc := range cases {
		t.Run(tc.client+"/"+tc.want, func(t *testing.T) {
			code, _, errOut := runCLI(t, setupEnv(home, tc.goos, "", tc.vars), "mcp", "setup", tc.client, "--yes")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if _, err := os.Stat(tc.want); err != nil {
				t.Errorf("%s was not written: %v", tc.want, err)
			}
		})
	}
	t.Run("--config", func(t *testing.T) {
		file := filepath.Join(home, "project", ".vscode", "mcp.json")
		code, _, errOut := runCLI(t, setupEnv(home, "linux", "", nil), "mcp", "setup", "vscode", "--config", file, "--yes")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		checkEntry(t, file, documentedClients[2])
	})
	t.Run("symlink", func(t *testing.T) {
		h := t.TempDir()
		real := filepath.Join(h, "dotfiles", "cursor-mcp.json")
		os.MkdirAll(filepath.Dir(real), 0o755)
		os.MkdirAll(filepath.Join(h, ".cursor"), 0o755)
		os.WriteFile(real, []byte(`{"mcpServers": {}}`), 0o644)
		link := filepath.Join(h, ".cursor", "mcp.json")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCLI(t, setupEnv(h, "linux", "", nil), "mcp", "setup", "cursor", "--yes")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the symlink was replaced by a file")
		}
		checkEntry(t, real, documentedClients[3])
	})
}

func TestMCPSetupGenericPrintsTheSnippet(t *testing.T) {
	home := t.TempDir()
	code, out, errOut := runCLI(t, setupEnv(home, "linux", "", nil), "mcp", "setup", "generic")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	end := strings.LastIndex(out, "}")
	var v any
	if err := json.Unmarshal([]byte(out[:end+1]), &v); err != nil {
		t.Fatalf("no JSON snippet in %q: %v", out, err)
	}
	if got, _ := json.Marshal(v); string(got) != `{"mcpServers":{"poppydesk":{"args":["mcp"],"command":"/usr/bin/poppydesk"}}}` {
		t.Errorf("snippet = %s", got)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("generic wrote files: %v", entries)
	}
}

func TestMCPSetupList(t *testing.T) {
	code, out, _ := runCLI(t, setupEnv("/home/u", "linux", "", nil), "mcp", "setup", "--list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range []string{"claude-code", "claude-desktop", "vscode", "cursor", "generic",
		"~/.claude.json", `%USERPROFILE%\.claude.json`,
		"~/Library/Application Support/Claude/claude_desktop_config.json", `%APPDATA%\Claude\claude_desktop_config.json`, "~/.config/Claude/claude_desktop_config.json",
		"~/.config/Code/User/mcp.json", "~/Library/Application Support/Code/User/mcp.json", `%APPDATA%\Code\User\mcp.json`,
		"~/.cursor/mcp.json", `%USERPROFILE%\.cursor\mcp.json`,
		"here:    /home/u/.cursor/mcp.json", `{"servers":{"poppydesk":{"type":"stdio","command":"PATH","args":["mcp"]}}}`} {
		if !strings.Contains(out, s) {
			t.Errorf("--list does not show %q:\n%s", s, out)
		}
	}
}

func TestMCPSetupUsage(t *testing.T) {
	cases := []struct {
		args []string
		exe  string
		code int
		want string
	}{
		{args: []string{"mcp", "setup"}, code: 2, want: "missing CLIENT"},
		{args: []string{"mcp", "setup", "emacs"}, code: 2, want: `unknown MCP client "emacs"`},
		{args: []string{"mcp", "setup", "cursor", "vscode"}, code: 2, want: `unexpected argument "vscode"`},
		{args: []string{"mcp", "setup", "--list", "cursor"}, code: 2, want: `unexpected argument "cursor"`},
		{args: []string{"mcp", "--yes"}, code: 2, want: "--yes goes with `poppydesk mcp setup`"},
		{args: []string{"mcp", "setup", "cursor", "--socket", "/x"}, code: 2, want: "--socket is not a flag of `poppydesk mcp setup`"},
		{args: []string{"mcp", "install"}, code: 2, want: "the only mcp subcommand is `setup`"},
		{args: []string{"mcp", "setup", "cursor", "--command", "poppydesk"}, code: 2, want: "--command must be an absolute path"},
		{args: []string{"mcp", "setup", "generic", "--config", "/x.json"}, code: 2, want: "--config does not go with generic"},
		{args: []string{"mcp", "setup", "cursor", "--yes"}, exe: "/tmp/go-build123/b001/exe/poppydesk", code: 1, want: "temporary `go run` build"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			env := setupEnv(t.TempDir(), "linux", "", nil)
			if tc.exe != "" {
				env.Executable = tc.exe
			}
			code, _, errOut := runCLI(t, env, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.code, tc.want)
			}
		})
	}
}

func TestUnifiedDiff(t *testing.T) {
	a := "{\n  \"a\": 1,\n  \"b\": 2\n}"
	b := "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}"
	want := "--- f\n+++ f\n@@ -1,4 +1,5 @@\n {\n   \"a\": 1,\n-  \"b\": 2\n+  \"b\": 2,\n+  \"c\": 3\n }"
	if got := unifiedDiff("f", "f", a, b); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := unifiedDiff("/dev/null", "f", "", "{}"); got != "--- /dev/null\n+++ f\n@@ -0,0 +1,1 @@\n+{}" {
		t.Errorf("new file: %q", got)
	}
}

// TestMCPSetupStartsTheRelayInstalledBeside: where the poppydesk-mcp program is installed beside
// poppydesk (as the packages install it), each client's entry starts it, without arguments; an
// entry that started `poppydesk mcp` is brought to it. On Windows the files are where each
// client keeps them there (%USERPROFILE%, %APPDATA%), and the program is poppydesk-mcp.exe.
func TestMCPSetupStartsTheRelayInstalledBeside(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			home := t.TempDir()
			bin := filepath.Join(home, "Programs", "Poppydesk")
			exe := ""
			if goos == "windows" {
				exe = ".exe"
			}
			os.MkdirAll(bin, 0o755)
			for _, name := range []string{"poppydesk", "poppydesk-mcp"} {
				if err := os.WriteFile(filepath.Join(bin, name+exe), []byte("program"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			appData := filepath.Join(home, "AppData", "Roaming")
			files := map[string]string{"claude-code": ".claude.json", "cursor": filepath.Join(".cursor", "mcp.json")}
			switch goos {
			case "windows":
				files["claude-desktop"] = filepath.Join("AppData", "Roaming", "Claude", "claude_desktop_config.json")
				files["vscode"] = filepath.Join("AppData", "Roaming", "Code", "User", "mcp.json")
			case "darwin":
				files["claude-desktop"] = filepath.Join("Library", "Application Support", "Claude", "claude_desktop_config.json")
				files["vscode"] = filepath.Join("Library", "Application Support", "Code", "User", "mcp.json")
			default:
				files["claude-desktop"] = filepath.Join(".config", "Claude", "claude_desktop_config.json")
				files["vscode"] = filepath.Join(".config", "Code", "User", "mcp.json")
			}
			relay := filepath.Join(bin, "poppydesk-mcp"+exe)
			for _, c := range documentedClients {
				file := filepath.Join(home, files[c.name])
				// An entry written before: `poppydesk mcp`.
				os.MkdirAll(filepath.Dir(file), 0o700)
				os.WriteFile(file, []byte(`{"`+c.key+`": {"poppydesk": `+c.entry+`}}`), 0o600)
				env := setupEnv(home, goos, "", map[string]string{"APPDATA": appData})
				env.Executable = filepath.Join(bin, "poppydesk"+exe)
				code, out, errOut := runCLI(t, env, "mcp", "setup", c.name, "--yes")
				if code != 0 {
					t.Fatalf("%s: exit %d: %s", c.name, code, errOut)
				}
				want := documentedClient{name: c.name, key: c.key,
					entry: strings.Replace(strings.Replace(c.entry, `"/usr/bin/poppydesk"`, string(mustRaw(relay)), 1), `["mcp"]`, `[]`, 1)}
				checkEntry(t, file, want)
				if !strings.Contains(out, "runs `"+relay+"`") {
					t.Errorf("%s: the preview does not name the program: %s", c.name, out)
				}
			}
		})
	}
}
