package cli

// `poppydesk man` prints the manual page poppydesk(1) in roff, generated from [commands]: each
// subcommand's summary, usage and flags are the ones `poppydesk SUBCOMMAND --help` prints, so the
// page cannot drift from the binary that prints it. The Debian package installs the release
// binary's page (scripts/package).
//
// The roff is written here rather than through a Markdown-to-roff converter: the page uses a
// handful of man(7) macros in a fixed structure, and the only escaping it needs is of
// backslashes, hyphens and lines that start with a dot or an apostrophe.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

func manCommand() command {
	return command{name: "man", summary: "Print the manual page poppydesk(1) (roff), generated from the subcommands' help.", usage: "", hidden: true,
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return errNoArguments(args)
				}
				date := time.Now().UTC()
				if s := env.Getenv("SOURCE_DATE_EPOCH"); s != "" {
					sec, err := strconv.ParseInt(s, 10, 64)
					if err != nil {
						return fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a Unix time", s)
					}
					date = time.Unix(sec, 0).UTC()
				}
				return writeManPage(env.Stdout, env.Version, date)
			}
		}}
}

// writeManPage writes poppydesk(1).
func writeManPage(w io.Writer, version string, date time.Time) error {
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	text := func(s string) { b.WriteString(roffText(s) + "\n") }

	line(`.TH POPPYDESK 1 "%s" "poppydesk %s" "User Commands"`, date.Format("2006-01-02"), roffEscape(version))
	line(".SH NAME")
	line(`poppydesk \- desktop Personal Agent host for the Personal Agent Protocol 0.4`)
	line(".SH SYNOPSIS")
	line(".B poppydesk")
	line(`[\fIFLAGS\fR]`)
	line(".br")
	line(".B poppydesk")
	line(`\fISUBCOMMAND\fR [\fIFLAGS\fR] [\fIARGS\fR]`)
	line(".SH DESCRIPTION")
	text("Poppydesk lets your AI model (any MCP client) act at Companies that speak the Personal Agent " +
		"Protocol (draft 0.4, with its Operations extension version 2). It keeps every secret in the desktop " +
		"keyring (the Secret Service), signs every request, and asks you in its own window before any " +
		"operation a Company wants approved. The model reaches Poppydesk only through its MCP server " +
		"(poppydesk-mcp, installed beside poppydesk, or `poppydesk mcp`), which can ask for everything and approve nothing.")
	line(".PP")
	text("With no subcommand, poppydesk opens its window. A second start brings the running window to the front.")

	cmds := commands()
	for _, c := range cmds {
		if c.name == "window" {
			if flags := manFlags(c); flags != "" {
				line(".SH OPTIONS")
				text("Flags of the window (poppydesk with no subcommand):")
				b.WriteString(flags)
			}
		}
	}
	line(".SH COMMANDS")
	for _, c := range cmds {
		if c.hidden {
			continue
		}
		usage := strings.Split(c.usage, "\n")
		line(`.SS "%s"`, roffEscape(strings.TrimSpace("poppydesk "+c.name+" "+usage[0])))
		text(c.summary)
		if len(usage) > 1 {
			line(".PP")
			line("Also:")
			for _, u := range usage[1:] {
				line(".br")
				line(`\fB%s\fR`, roffEscape(strings.TrimSpace(u)))
			}
		}
		b.WriteString(manFlags(c))
	}
	line(".SH MODEL INTERFACE")
	text("MCP clients start poppydesk-mcp (or `poppydesk mcp`, the same server in this program) as a stdio server; " +
		"`poppydesk mcp setup CLIENT` writes that entry. It relays to the running app, found from your user id and home " +
		"folder alone: the Unix socket /run/user/UID/poppydesk/mcp-HOMEKEY.sock when /run/user/UID is your private folder, " +
		"else /tmp/poppydesk-UID/mcp-HOMEKEY.sock (HOMEKEY: 12 hex digits of the SHA-256 of the home folder); on Windows " +
		"the named pipe \\\\.\\pipe\\poppydesk-mcp-SID-HOMEKEY, which only your user may open. A socket or folder " +
		"that another user owns or can write in is refused. When nothing answers it starts the window, unless there is no " +
		"display to show it on.")
	line(".PP")
	text("Every failure to reach or start the app is the JSON-RPC error -32000 on the request that needed it, saying what " +
		"failed and what to do; a call in flight when the app ends gets -32001, and the next request reaches the app again. " +
		"A line that is not JSON gets -32700, a message MCP does not accept (a batch, a method that is not a string) -32600, " +
		"and the session goes on. A request the client cancelled gets no response.")
	line(".SH EXIT STATUS")
	text("0 on success, 1 on a failure (the message on standard error says what failed and what to do), 2 on a usage error.")
	line(".SH ENVIRONMENT")
	for _, e := range [][2]string{
		{"XDG_DATA_HOME", "The state database is in $XDG_DATA_HOME/poppydesk (default ~/.local/share/poppydesk). Secrets are never written there."},
		{"XDG_CONFIG_HOME", "Settings are in $XDG_CONFIG_HOME/poppydesk (default ~/.config/poppydesk)."},
		{"XDG_STATE_HOME", "The log is $XDG_STATE_HOME/poppydesk/poppydesk.log (default ~/.local/state/poppydesk)."},
		{"HOME", "The home folder names the model interface (see MODEL INTERFACE); XDG_RUNTIME_DIR, DISPLAY and the session bus play no part in finding it."},
		{"POPPYDESK_KEYRING_SERVICE", "The Secret Service \"service\" of Poppydesk's keyring items (default: poppydesk)."},
	} {
		line(".TP")
		line(`.B %s`, e[0])
		text(e[1])
	}
	line(".SH SEE ALSO")
	text("poppydesk help, and poppydesk SUBCOMMAND --help for each subcommand.")
	_, err := io.WriteString(w, b.String())
	return err
}

// manFlags lists c's flags as tagged paragraphs (the same text as `--help`).
func manFlags(c command) string {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.register(fs, &Env{})
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		b.WriteString(".TP\n")
		if arg != "" {
			fmt.Fprintf(&b, "\\fB\\-\\-%s\\fR \\fI%s\\fR\n", roffEscape(f.Name), roffEscape(arg))
		} else {
			fmt.Fprintf(&b, "\\fB\\-\\-%s\\fR\n", roffEscape(f.Name))
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "[]" {
			usage += " (default " + def + ")"
		}
		b.WriteString(roffText(usage) + "\n")
	})
	return b.String()
}

// roffEscape escapes backslashes and hyphens for roff.
func roffEscape(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// roffText escapes s as running text: no line may start with a control character.
func roffText(s string) string {
	s = roffEscape(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
