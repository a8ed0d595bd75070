package cli

// `poppydesk mcp setup CLIENT` adds Poppydesk's stdio MCP server (`ABSOLUTE-PATH mcp`) to an MCP
// client's own configuration file, in the format that client documents:
//
//   - Claude Code, user scope: ~/.claude.json, top-level "mcpServers", an entry
//     {"type": "stdio", "command", "args", "env"} — what `claude mcp add --scope user` writes
//     (Claude Code's MCP documentation, "MCP installation scopes").
//   - Claude Desktop: claude_desktop_config.json in Claude's folder (macOS ~/Library/Application
//     Support/Claude, Windows %APPDATA%\Claude; Linux has no official build, and the community
//     builds use ~/.config/Claude), top-level "mcpServers", an entry {"command", "args"}
//     (modelcontextprotocol.io, "Connect to local MCP servers").
//   - VS Code, user profile: Code/User/mcp.json in VS Code's folder (~/.config, ~/Library/
//     Application Support, %APPDATA%), top-level "servers", an entry {"type": "stdio",
//     "command", "args"} (VS Code's "MCP configuration reference").
//   - Cursor, global: ~/.cursor/mcp.json, top-level "mcpServers", an entry {"command", "args"}
//     (Cursor's MCP documentation).
//   - generic: the {"mcpServers": …} snippet most clients accept, printed only.
//
// Changing a file the user owns is done carefully: the change is shown first as a diff and
// written only after a "y" (or with --yes); every other key of the file, and every other key of
// an existing "poppydesk" entry, is kept in its order and with its value as written; a file that is
// not a JSON object (JSONC comments, a syntax error) is refused and left alone; the old file is
// kept as FILE.bak-YYYYMMDDhhmmss; the new one replaces it atomically (same folder, same mode, a
// symlink's target); a second run finds the entry and writes nothing.
//
// The JSON object is parsed here with encoding/json's tokenizer into an ordered list of raw
// values, because decoding into a map would sort the file's keys and re-encode its numbers. The
// preview is a unified diff of one contiguous change (the common first and last lines trimmed),
// which is all a single inserted or replaced entry produces; no diff library is needed for it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

// mcpServerName is the key of Poppydesk's entry in a client's server list.
const mcpServerName = "poppydesk"

// mcpClient is one MCP client that `poppydesk mcp setup` knows.
type mcpClient struct {
	name  string // the CLIENT argument
	title string // shown to the user
	scope string // which of the client's configurations this is
	// key holds the servers in the file ("mcpServers" or "servers"); "" for generic.
	key string
	// entry is the server entry that starts command with args, in the documented key order.
	entry func(command string, args []string) []jsonField
	// where names the file on each system (for --list); path resolves it here.
	where map[string]string
	path  func(e mcpPathEnv) (string, error)
	// source is the documentation the file and format follow.
	source string
	// next says what the user does after the change.
	next string
}

// jsonField is one key of a JSON object and its value.
type jsonField struct {
	key   string
	value any
	// ifAbsent: a default that is only added, never replaced, and not needed for "already set
	// up" (Claude Code's "env", which the user may have filled).
	ifAbsent bool
}

func stdioEntry(typed, env bool) func(command string, args []string) []jsonField {
	return func(command string, args []string) []jsonField {
		var f []jsonField
		if typed {
			f = append(f, jsonField{key: "type", value: "stdio"})
		}
		f = append(f, jsonField{key: "command", value: command}, jsonField{key: "args", value: args})
		if env {
			f = append(f, jsonField{key: "env", value: map[string]string{}, ifAbsent: true})
		}
		return f
	}
}

// mcpPathEnv is what a client's default file depends on.
type mcpPathEnv struct {
	goos   string
	home   string
	getenv func(string) string
}

// appData is the per-user application folder Electron apps (Claude Desktop, VS Code) use:
// ~/Library/Application Support on macOS, %APPDATA% on Windows, $XDG_CONFIG_HOME or ~/.config
// elsewhere.
func (e mcpPathEnv) appData() (string, error) {
	switch e.goos {
	case "darwin":
		return filepath.Join(e.home, "Library", "Application Support"), nil
	case "windows":
		if d := e.getenv("APPDATA"); d != "" {
			return d, nil
		}
		return "", errors.New("%APPDATA% is not set")
	default:
		if d := e.getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
			return d, nil
		}
		return filepath.Join(e.home, ".config"), nil
	}
}

func inHome(parts ...string) func(mcpPathEnv) (string, error) {
	return func(e mcpPathEnv) (string, error) { return filepath.Join(append([]string{e.home}, parts...)...), nil }
}

func inAppData(parts ...string) func(mcpPathEnv) (string, error) {
	return func(e mcpPathEnv) (string, error) {
		d, err := e.appData()
		if err != nil {
			return "", err
		}
		return filepath.Join(append([]string{d}, parts...)...), nil
	}
}

// mcpClients are the clients, in the order --list shows them.
func mcpClients() []mcpClient {
	return []mcpClient{
		{name: "claude-code", title: "Claude Code", scope: "user scope: every project", key: "mcpServers",
			entry:  stdioEntry(true, true),
			where:  map[string]string{"linux": "~/.claude.json", "darwin": "~/.claude.json", "windows": `%USERPROFILE%\.claude.json`},
			path:   inHome(".claude.json"),
			source: "Claude Code docs, MCP installation scopes (the user scope of `claude mcp add --scope user`)",
			next:   "Start a new Claude Code session; `/mcp` lists poppydesk."},
		{name: "claude-desktop", title: "Claude Desktop", scope: "every conversation", key: "mcpServers",
			entry: stdioEntry(false, false),
			where: map[string]string{"linux": "~/.config/Claude/claude_desktop_config.json (community builds; there is no official Linux build)",
				"darwin": "~/Library/Application Support/Claude/claude_desktop_config.json", "windows": `%APPDATA%\Claude\claude_desktop_config.json`},
			path:   inAppData("Claude", "claude_desktop_config.json"),
			source: "modelcontextprotocol.io, Connect to local MCP servers",
			next:   "Quit Claude Desktop completely and start it again; poppydesk then shows among its tools."},
		{name: "vscode", title: "VS Code", scope: "user profile: every workspace", key: "servers",
			entry: stdioEntry(true, false),
			where: map[string]string{"linux": "~/.config/Code/User/mcp.json", "darwin": "~/Library/Application Support/Code/User/mcp.json",
				"windows": `%APPDATA%\Code\User\mcp.json`},
			path:   inAppData("Code", "User", "mcp.json"),
			source: "VS Code docs, MCP configuration reference",
			next:   "In VS Code, run `MCP: List Servers` and start poppydesk (VS Code asks you to trust it first)."},
		{name: "cursor", title: "Cursor", scope: "global: every project", key: "mcpServers",
			entry:  stdioEntry(false, false),
			where:  map[string]string{"linux": "~/.cursor/mcp.json", "darwin": "~/.cursor/mcp.json", "windows": `%USERPROFILE%\.cursor\mcp.json`},
			path:   inHome(".cursor", "mcp.json"),
			source: "Cursor docs, Model Context Protocol (MCP)",
			next:   "In Cursor, open Settings → MCP and check that poppydesk is switched on."},
		{name: "generic", title: "any other MCP client", scope: "printed only", entry: stdioEntry(false, false),
			source: "the mcpServers format most clients accept",
			next:   "Add this to your client's configuration; some clients name the list differently (VS Code: \"servers\")."},
	}
}

func mcpClientNames() string {
	var n []string
	for _, c := range mcpClients() {
		n = append(n, c.name)
	}
	return strings.Join(n, ", ")
}

// mcpSetupOptions are the flags of `poppydesk mcp setup`.
type mcpSetupOptions struct {
	yes     bool
	list    bool
	command string // the program the client starts; "": this one
	config  string // a file instead of the client's default
}

func runMCPSetup(ctx context.Context, env *Env, o mcpSetupOptions, args []string) error {
	if o.list {
		if len(args) > 0 {
			return errUnexpected(args[0])
		}
		return listMCPClients(env)
	}
	switch {
	case len(args) == 0:
		return errMissing("CLIENT (" + mcpClientNames() + "), or --list")
	case len(args) > 1:
		return errUnexpected(args[1])
	}
	var client *mcpClient
	for _, c := range mcpClients() {
		if c.name == args[0] {
			client = &c
			break
		}
	}
	if client == nil {
		return usageError{fmt.Sprintf("unknown MCP client %q; the clients are %s (`poppydesk mcp setup --list` shows their files)", args[0], mcpClientNames())}
	}
	poppydesk, err := setupCommandPath(env, o.command)
	if err != nil {
		return err
	}
	entry := client.entry(relayCommand(env.GOOS, poppydesk))
	if client.key == "" {
		if o.config != "" {
			return usageError{"--config does not go with generic, which only prints the snippet"}
		}
		servers := jsonObject{}
		servers.set(mcpServerName, mustRaw(withFields(jsonObject{}, entry)))
		snippet := jsonObject{}
		snippet.set("mcpServers", mustRaw(servers))
		text, err := snippet.indent("  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s\n%s\n", text, client.next)
		return nil
	}
	path := o.config
	if path == "" {
		home, err := setupHome(env)
		if err != nil {
			return err
		}
		if path, err = client.path(mcpPathEnv{goos: env.GOOS, home: home, getenv: env.Getenv}); err != nil {
			return fmt.Errorf("finding %s's configuration file: %v; name the file with --config", client.title, err)
		}
	}
	if !filepath.IsAbs(path) {
		if path, err = filepath.Abs(path); err != nil {
			return err
		}
	}
	return setupClientFile(ctx, env, *client, path, entry, o.yes)
}

// setupCommandPath is the absolute path the client will start: --command, or this program.
func setupCommandPath(env *Env, flagValue string) (string, error) {
	if flagValue != "" {
		if !filepath.IsAbs(flagValue) {
			return "", usageError{fmt.Sprintf("--command must be an absolute path, got %q", flagValue)}
		}
		return filepath.Clean(flagValue), nil
	}
	exe, err := env.executable()
	if err != nil {
		return "", err
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return "", err
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "", fmt.Errorf("this program runs from a temporary `go run` build (%s), which the client could not start later; install Poppydesk or build it (`make build`), or pass --command PATH", exe)
	}
	return exe, nil
}

// relayCommand is the command line a client starts for the poppydesk program at poppydesk: the
// poppydesk-mcp program installed beside it (the same relay as `poppydesk mcp`, which starts in
// the time of a small program because it loads nothing else), else `poppydesk mcp`.
func relayCommand(goos, poppydesk string) (string, []string) {
	name := "poppydesk-mcp"
	if goos == "windows" {
		name += ".exe"
	}
	if filepath.Base(poppydesk) == name {
		return poppydesk, []string{}
	}
	relay := filepath.Join(filepath.Dir(poppydesk), name)
	if fi, err := os.Stat(relay); err == nil && fi.Mode().IsRegular() && (goos == "windows" || fi.Mode()&0o111 != 0) {
		return relay, []string{}
	}
	return poppydesk, []string{"mcp"}
}

func setupHome(env *Env) (string, error) {
	if env.Home != "" {
		return env.Home, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home folder failed: %w; set $HOME or name the file with --config", err)
	}
	return h, nil
}

func listMCPClients(env *Env) error {
	w := env.Stdout
	home, _ := setupHome(env)
	pe := mcpPathEnv{goos: env.GOOS, home: home, getenv: env.Getenv}
	fmt.Fprintln(w, "MCP clients that `poppydesk mcp setup CLIENT` configures, and their files:")
	fmt.Fprintln(w, "(PATH mcp below: where the poppydesk-mcp program is installed beside poppydesk, the entry starts it, without arguments.)")
	for _, c := range mcpClients() {
		fmt.Fprintf(w, "\n  %-15s %s (%s)\n", c.name, c.title, c.scope)
		if c.key == "" {
			fmt.Fprintf(w, "  %-15s prints the snippet; writes no file\n", "")
			continue
		}
		for _, goos := range []string{"linux", "darwin", "windows"} {
			fmt.Fprintf(w, "  %-15s %-8s %s\n", "", goos+":", c.where[goos])
		}
		if home != "" {
			if p, err := c.path(pe); err == nil {
				fmt.Fprintf(w, "  %-15s %-8s %s\n", "", "here:", p)
			}
		}
		inner := jsonObject{}
		inner.set(mcpServerName, mustRaw(withFields(jsonObject{}, c.entry("PATH", []string{"mcp"}))))
		format := jsonObject{}
		format.set(c.key, mustRaw(inner))
		fmt.Fprintf(w, "  %-15s %-8s %s\n", "", "format:", mustRaw(format))
		fmt.Fprintf(w, "  %-15s %-8s %s\n", "", "source:", c.source)
	}
	return nil
}

// setupClientFile adds entry to the client's file at path (after confirmation unless yes).
func setupClientFile(ctx context.Context, env *Env, c mcpClient, path string, entry []jsonField, yes bool) error {
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved // a symlinked file (a dotfiles checkout) is changed where it lives
	}
	before, err := os.ReadFile(target)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s failed: %w", target, err)
	}
	plan, err := planSetup(c, target, before, exists, entry)
	if err != nil {
		return err
	}
	w := env.Stdout
	command := commandLine(entry)
	if plan.upToDate {
		fmt.Fprintf(w, "Poppydesk is already set up for %s in %s (%s); nothing to change.\n", c.title, target, command)
		return nil
	}
	fmt.Fprintf(w, "Poppydesk will be set up for %s (%s): the server %q runs `%s`.\n", c.title, c.scope, mcpServerName, command)
	switch {
	case !exists:
		fmt.Fprintf(w, "%s does not exist yet; it will be created.\n", target)
	default:
		fmt.Fprintf(w, "%s will be changed; the current file is kept as %s.\n", target, filepath.Base(target)+".bak-YYYYMMDDhhmmss")
		if plan.reformatted {
			fmt.Fprintln(w, "The rest of the file keeps its keys and values; its layout is rewritten with one key per line.")
		}
	}
	fmt.Fprintf(w, "\n%s\n", plan.diff)
	if !yes {
		ok, err := confirm(env, fmt.Sprintf("Write this to %s? [y/N] ", target))
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(w, "Nothing was written.")
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The file may have changed while the user read the preview (Claude Code rewrites its file
	// often): then the preview is stale, and writing would lose that change.
	now, err := os.ReadFile(target)
	if exists != (err == nil) || exists && !bytes.Equal(now, before) {
		return fmt.Errorf("%s changed while the change was shown; nothing was written. Run the command again", target)
	}
	backup := ""
	if exists {
		if backup, err = writeBackup(target, before); err != nil {
			return err
		}
	}
	if err := replaceFile(target, plan.after); err != nil {
		return err
	}
	if backup != "" {
		fmt.Fprintf(w, "Wrote %s (the previous file is %s).\n", target, backup)
	} else {
		fmt.Fprintf(w, "Wrote %s.\n", target)
	}
	fmt.Fprintln(w, c.next)
	return nil
}

// commandLine is the command and arguments an entry starts, for messages.
func commandLine(entry []jsonField) string {
	var command string
	var args []string
	for _, f := range entry {
		switch f.key {
		case "command":
			command, _ = f.value.(string)
		case "args":
			args, _ = f.value.([]string)
		}
	}
	return strings.Join(append([]string{command}, args...), " ")
}

// setupPlan is what a setup would change.
type setupPlan struct {
	upToDate    bool   // the entry is there with every key as it would be written
	after       []byte // the new file
	diff        string // unified diff from the current file (re-laid out) to after
	reformatted bool   // the current file's layout differs from what is written back
}

// planSetup computes the new content of a client's file without touching the disk.
func planSetup(c mcpClient, path string, before []byte, exists bool, entry []jsonField) (setupPlan, error) {
	byHand := func(why string) error {
		snippet, _ := withFields(jsonObject{}, entry).indent("  ")
		return fmt.Errorf("%s %s; Poppydesk left it unchanged. Fix the file, or add this entry to its %q object by hand:\n%q: %s", path, why, c.key, mcpServerName, snippet)
	}
	indentUnit := "  "
	var top jsonObject
	if exists && len(bytes.TrimSpace(before)) > 0 {
		var err error
		if top, err = parseJSONObject(before); err != nil {
			why := "is not valid JSON (" + err.Error() + ")"
			if c.name == "vscode" {
				why += "; VS Code allows comments and trailing commas in mcp.json, which this command cannot keep"
			}
			return setupPlan{}, byHand(why)
		}
		indentUnit = detectIndent(before)
	}
	servers := jsonObject{}
	if raw, ok := top.get(c.key); ok {
		var err error
		if servers, err = parseJSONObject(raw); err != nil {
			return setupPlan{}, byHand(fmt.Sprintf("has %q, but it is not a JSON object", c.key))
		}
	}
	current := jsonObject{}
	if raw, ok := servers.get(mcpServerName); ok {
		if o, err := parseJSONObject(raw); err == nil {
			current = o
			if hasFields(o, entry) {
				return setupPlan{upToDate: true}, nil
			}
		} // an entry that is not an object is replaced
	}
	servers.set(mcpServerName, mustRaw(withFields(current, entry)))
	top.set(c.key, mustRaw(servers))

	afterText, err := top.indent(indentUnit)
	if err != nil {
		return setupPlan{}, err
	}
	after := []byte(afterText + "\n")
	var beforeText string
	reformatted := false
	if exists && len(bytes.TrimSpace(before)) > 0 {
		old, _ := parseJSONObject(before)
		beforeText, err = old.indent(indentUnit)
		if err != nil {
			return setupPlan{}, err
		}
		reformatted = strings.TrimRight(string(before), "\r\n") != beforeText
	}
	from := path
	if !exists {
		from = "/dev/null"
	}
	return setupPlan{after: after, diff: unifiedDiff(from, path, beforeText, afterText), reformatted: reformatted}, nil
}

// hasFields reports whether o has every field of want with an equal value (as JSON).
func hasFields(o jsonObject, want []jsonField) bool {
	for _, f := range want {
		if f.ifAbsent {
			continue
		}
		raw, ok := o.get(f.key)
		if !ok {
			return false
		}
		var have, expect any
		if json.Unmarshal(raw, &have) != nil || json.Unmarshal(mustRaw(f.value), &expect) != nil || !reflect.DeepEqual(have, expect) {
			return false
		}
	}
	return true
}

// confirm asks a yes/no question on the command's streams; only "y" or "yes" is a yes.
func confirm(env *Env, question string) (bool, error) {
	fmt.Fprint(env.Stdout, question)
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		fmt.Fprintln(env.Stdout)
		return false, errors.New("no answer on standard input; nothing was written. Run with --yes to write without asking")
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

// writeBackup copies the current file to FILE.bak-YYYYMMDDhhmmss (a new name if that exists).
func writeBackup(path string, data []byte) (string, error) {
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	base := path + ".bak-" + time.Now().Format("20060102150405")
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("keeping a backup of %s failed: %w; nothing was written", path, err)
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("keeping a backup of %s failed: %w; nothing was written", path, err)
		}
		return name, nil
	}
}

// replaceFile writes data to path through a temporary file in the same folder and a rename, so
// the client never reads half a file. It keeps the mode of an existing file (0600 for a new one)
// and creates the folder (0700) if needed.
func replaceFile(path string, data []byte) error {
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the folder %s failed: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s failed: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s failed: %w", path, err)
	}
	return nil
}

// jsonObject is a JSON object whose keys keep their order and whose values stay as written.
type jsonObject struct {
	keys []string
	vals map[string]json.RawMessage
}

// parseJSONObject parses data, which must be exactly one JSON object without duplicate keys.
func parseJSONObject(data []byte) (jsonObject, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return jsonObject{}, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return jsonObject{}, errors.New("the top level is not an object")
	}
	o := jsonObject{vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonObject{}, err
		}
		key, ok := tok.(string)
		if !ok {
			return jsonObject{}, fmt.Errorf("unexpected %v where a key belongs", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return jsonObject{}, err
		}
		if _, dup := o.vals[key]; dup {
			return jsonObject{}, fmt.Errorf("the key %q appears twice", key)
		}
		o.keys = append(o.keys, key)
		o.vals[key] = raw
	}
	if _, err := dec.Token(); err != nil {
		return jsonObject{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jsonObject{}, errors.New("there is more after the object")
	}
	return o, nil
}

func (o jsonObject) get(key string) (json.RawMessage, bool) {
	v, ok := o.vals[key]
	return v, ok
}

// set replaces key's value in place, or appends the key.
func (o *jsonObject) set(key string, v json.RawMessage) {
	if o.vals == nil {
		o.vals = map[string]json.RawMessage{}
	}
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

// MarshalJSON writes the object compactly, keys in order.
func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustRaw(k))
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// indent lays the object out with one key per line.
func (o jsonObject) indent(unit string) (string, error) {
	compact, _ := o.MarshalJSON()
	var b bytes.Buffer
	if err := json.Indent(&b, compact, "", unit); err != nil {
		return "", err
	}
	return b.String(), nil
}

// withFields returns a copy of base with fields set (existing keys keep their place).
func withFields(base jsonObject, fields []jsonField) jsonObject {
	o := jsonObject{keys: append([]string{}, base.keys...), vals: map[string]json.RawMessage{}}
	for k, v := range base.vals {
		o.vals[k] = v
	}
	for _, f := range fields {
		if _, ok := o.vals[f.key]; ok && f.ifAbsent {
			continue
		}
		o.set(f.key, mustRaw(f.value))
	}
	return o
}

// mustRaw encodes v (strings, string slices and maps, jsonObject), without HTML escaping.
func mustRaw(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("encoding %T: %v", v, err)) // only values built here are encoded
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// detectIndent returns the indentation unit of a laid-out JSON file: the leading white space of
// its first indented line (a tab, or spaces), or two spaces.
func detectIndent(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed == "" || len(trimmed) == len(line) {
			continue
		}
		lead := line[:len(line)-len(trimmed)]
		if strings.Trim(lead, "\t") == "" || strings.Trim(lead, " ") == "" {
			return lead
		}
		break
	}
	return "  "
}

// unifiedDiff shows the change from a to b (both laid out one key per line) as one unified-diff
// hunk with three lines of context.
func unifiedDiff(fromName, toName, a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	p := 0
	for p < len(al) && p < len(bl) && al[p] == bl[p] {
		p++
	}
	s := 0
	for s < len(al)-p && s < len(bl)-p && al[len(al)-1-s] == bl[len(bl)-1-s] {
		s++
	}
	const around = 3
	start := max(p-around, 0)
	aEnd, bEnd := len(al)-s, len(bl)-s
	aTail, bTail := min(aEnd+around, len(al)), min(bEnd+around, len(bl))
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", fromName, toName)
	fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(start, aTail-start), hunkRange(start, bTail-start))
	for _, l := range al[start:p] {
		out.WriteString(" " + l + "\n")
	}
	for _, l := range al[p:aEnd] {
		out.WriteString("-" + l + "\n")
	}
	for _, l := range bl[p:bEnd] {
		out.WriteString("+" + l + "\n")
	}
	for _, l := range al[aEnd:aTail] {
		out.WriteString(" " + l + "\n")
	}
	return strings.TrimRight(out.String(), "\n")
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
