#!/usr/bin/env bash
# Tests the Debian package the way a user meets it. Needs root (it installs and purges the
# package) and a package built by `make package` (build/poppydesk_*.deb).
#
#  1. `apt-get install -y ./build/poppydesk_*.deb`; the installed files (`dpkg -L`) are kept.
#  2. The installed desktop entry and metainfo pass desktop-file-validate and
#     `appstreamcli validate --no-net`; `man poppydesk` finds the page, and man reads it without
#     a warning. The operator's systemd unit passes `systemd-analyze verify` and is not enabled.
#  3. First start from the menu: the Exec= line of the installed .desktop file runs in a desktop
#     session made here (a private Xvfb display, session bus and unlocked gnome-keyring, a fresh
#     HOME, nothing else in the environment), with stdin from /dev/null and no terminal. The window
#     appears with the WM_CLASS that StartupWMClass names, finds its data folders under HOME (XDG
#     defaults) and shows data from Go. A second launch the same way exits at once and leaves one
#     window. While it runs, `poppydesk mcp setup CLIENT --yes` for each client writes that client's
#     file under HOME, naming the installed /usr/bin/poppydesk-mcp; scripts/mcp-config-check.mjs
#     checks each file's exact keys and starts the server it names with the official MCP SDK and
#     the environment the SDK gives servers (no XDG_RUNTIME_DIR, DISPLAY or session bus), which
#     lists Poppydesk's tools; a second setup says "already set up". A client whose HOME is another
#     folder is told, in those words, that a window runs but its model interface does not answer
#     there. SIGTERM (what a session logout sends) ends the app cleanly.
#  4. With no app running: the TypeScript SDK client with its default environment is told that
#     Poppydesk cannot be started without a display, and nothing starts; Claude Code (npm
#     @anthropic-ai/claude-code, in the session's terminal environment) runs `claude mcp list` on
#     the ~/.claude.json that setup wrote: poppydesk-mcp starts the app's window itself, and Claude
#     Code shows poppydesk connected. SIGTERM ends that app cleanly too.
#  5. `apt-get remove --purge -y poppydesk`: no file of the package is left, and every directory
#     left is another package's or holds others' files. The user's data folders stay, as they should.
#
# Prints the time of each part. Output (logs, screenshot): $PACKAGE_TEST_OUT, default out/package-test.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

OUT=${PACKAGE_TEST_OUT:-out/package-test}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
fail() { echo "package-test: FAIL: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
t_all=$(now_ms)

[ "$(id -u)" = 0 ] || fail "installing the package needs root; run as root (CI does), or skip this test"
need() { command -v "$1" >/dev/null 2>&1 || fail "'$1' is missing; install the Debian package $2 (scripts/bootstrap.sh does)"; }
need Xvfb xvfb
need xwininfo x11-utils
need xprop x11-utils
need import imagemagick
need convert imagemagick
need dbus-daemon dbus-daemon
need gnome-keyring-daemon gnome-keyring
need appstreamcli appstream
need desktop-file-validate desktop-file-utils
need man man-db
need node nodejs
need systemd-analyze systemd
CLAUDE="$ROOT/e2e/mcp/node_modules/.bin/claude"
[ -x "$CLAUDE" ] || fail "Claude Code is missing ($CLAUDE); run scripts/bootstrap.sh (npm ci in e2e/mcp)"

shopt -s nullglob
debs=(build/poppydesk_*.deb)
shopt -u nullglob
[ "${#debs[@]}" = 1 ] || fail "want exactly one build/poppydesk_*.deb, found ${#debs[@]}; run 'make package'"
DEB=${debs[0]}

tmp=$(mktemp -d)
APP_PID="" XVFB_PID="" DBUS_PID="" KEYRING_PID="" installed=0
cleanup() {
	local rc=$?
	for p in $APP_PID $KEYRING_PID $XVFB_PID $DBUS_PID; do kill "$p" 2>/dev/null || true; done
	sleep 0.3
	for p in $APP_PID $KEYRING_PID $XVFB_PID $DBUS_PID; do kill -9 "$p" 2>/dev/null || true; done
	if [ "$installed" = 1 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -q poppydesk >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- 1. install
t0=$(now_ms)
if dpkg-query -W -f='${Status}' poppydesk 2>/dev/null | grep -q 'install ok installed'; then
	echo "package-test: note: a poppydesk package was installed already; it is replaced, and purged at the end" >&2
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "./$DEB" >"$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log" >&2; fail "apt-get install ./$DEB failed (log: $OUT/install.log)"; }
installed=1
install_ms=$(($(now_ms) - t0))
dpkg -L poppydesk >"$OUT/dpkg-L.txt"
: >"$tmp/files"
: >"$tmp/dirs"
while IFS= read -r p; do
	if [ -d "$p" ] && [ ! -L "$p" ]; then echo "$p" >>"$tmp/dirs"; else echo "$p" >>"$tmp/files"; fi
done <"$OUT/dpkg-L.txt"
nfiles=$(wc -l <"$tmp/files")
[ "$nfiles" -ge 13 ] || fail "dpkg -L lists only $nfiles files"
BIN=$(command -v poppydesk || true)
[ "$BIN" = /usr/bin/poppydesk ] || fail "poppydesk on PATH is '$BIN', want /usr/bin/poppydesk"
[ "$(command -v poppydesk-mcp || true)" = /usr/bin/poppydesk-mcp ] || fail "poppydesk-mcp is not installed as /usr/bin/poppydesk-mcp"
[ "$(poppydesk-mcp --version | cut -d' ' -f2)" = "$(poppydesk version | cut -d' ' -f2)" ] || fail "poppydesk-mcp --version ($(poppydesk-mcp --version)) is not the version of poppydesk ($(poppydesk version))"

# ---------------------------------------------------------------- 2. the installed metadata
DESKTOP=/usr/share/applications/poppydesk.desktop
METAINFO=/usr/share/metainfo/io.github.poppydesk.Poppydesk.metainfo.xml
dfv=$(desktop-file-validate "$DESKTOP" 2>&1) || fail "desktop-file-validate $DESKTOP: $dfv"
[ -z "$dfv" ] || fail "desktop-file-validate $DESKTOP: $dfv"
appstreamcli validate --no-net "$METAINFO" >"$OUT/appstream.txt" 2>&1 || { cat "$OUT/appstream.txt" >&2; fail "appstreamcli validate --no-net $METAINFO"; }
[ "$(man -w poppydesk)" = /usr/share/man/man1/poppydesk.1.gz ] || fail "man -w poppydesk does not find /usr/share/man/man1/poppydesk.1.gz"
manwarn=$(MANWIDTH=80 man --warnings -l /usr/share/man/man1/poppydesk.1.gz 2>&1 >/dev/null) || fail "man cannot read the page: $manwarn"
[ -z "$manwarn" ] || fail "man warns about the page: $manwarn"
MANWIDTH=80 man poppydesk 2>/dev/null | grep -q 'poppydesk mcp setup' || fail "man poppydesk does not show the mcp setup usage"
for n in 16 22 24 32 48 64 128 256 512; do
	f=/usr/share/icons/hicolor/${n}x${n}/apps/poppydesk.png
	[ "$(identify -format '%wx%h' "$f" 2>/dev/null)" = "${n}x${n}" ] || fail "$f is not a ${n}x${n} image"
done

# The operator's systemd unit: installed, valid to systemd-analyze, and not enabled.
UNIT=/usr/lib/systemd/system/poppydesk-operator.service
[ -f "$UNIT" ] || fail "the package does not install $UNIT"
ana=$(systemd-analyze verify --man=no "$UNIT" 2>&1) || fail "systemd-analyze verify $UNIT: $ana"
[ -z "$ana" ] || fail "systemd-analyze verify $UNIT: $ana"
[ ! -e /etc/systemd/system/multi-user.target.wants/poppydesk-operator.service ] || fail "installing the package enabled poppydesk-operator.service; it must stay disabled"
[ "$(stat -c %a /etc/poppydesk-operator/operator.env)" = 600 ] || fail "/etc/poppydesk-operator/operator.env is not mode 0600"

# The Exec= and StartupWMClass= of the [Desktop Entry] group.
entry_key() { awk -v k="$1" '/^\[/ { g = ($0 == "[Desktop Entry]") } g && index($0, k "=") == 1 { print substr($0, length(k) + 2); exit }' "$DESKTOP"; }
EXEC=$(entry_key Exec)
WMCLASS=$(entry_key StartupWMClass)
[ -n "$EXEC" ] || fail "$DESKTOP has no Exec="
# Field codes (%f, %U, ...) expand to nothing for a launch without files.
read -r -a EXEC_ARGV <<<"$(sed -E 's/(^| )%[fFuUdDnNickvm]( |$)/ /g' <<<"$EXEC")"
[ "$(command -v "${EXEC_ARGV[0]}")" = /usr/bin/poppydesk ] || fail "Exec=$EXEC does not start the installed /usr/bin/poppydesk"

# ---------------------------------------------------------------- 3. a desktop session
t0=$(now_ms)
HOME_DIR="$tmp/home" RUN_DIR="$tmp/run"
mkdir -p "$HOME_DIR"
mkdir -m 700 "$RUN_DIR"
exec 3>"$tmp/display"
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp >"$OUT/xvfb.log" 2>&1 &
XVFB_PID=$!
exec 3>&-
for _ in $(seq 100); do [ -s "$tmp/display" ] && break; sleep 0.1; done
[ -s "$tmp/display" ] || fail "Xvfb did not start (see $OUT/xvfb.log)"
DISPLAY_NAME=":$(head -n1 "$tmp/display")"
dbus-daemon --session --fork --nopidfile --print-address=4 --print-pid=5 4>"$tmp/dbus.addr" 5>"$tmp/dbus.pid"
DBUS_PID=$(head -n1 "$tmp/dbus.pid")
BUS=$(head -n1 "$tmp/dbus.addr")
# What a desktop session gives a program it starts from the menu, and nothing else.
SESSION=(env -i "HOME=$HOME_DIR" "USER=$(id -un)" "LOGNAME=$(id -un)" "PATH=/usr/local/bin:/usr/bin:/bin"
	"LANG=C.UTF-8" "DISPLAY=$DISPLAY_NAME" "DBUS_SESSION_BUS_ADDRESS=$BUS" "XDG_RUNTIME_DIR=$RUN_DIR"
	"XDG_SESSION_TYPE=x11")
# The session's keyring (a login keyring unlocked with a throwaway password).
head -c 18 /dev/urandom | base64 | "${SESSION[@]}" gnome-keyring-daemon --foreground --unlock --components=secrets >"$OUT/keyring.log" 2>&1 &
KEYRING_PID=$!
for _ in $(seq 100); do
	"${SESSION[@]}" dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true' && break
	sleep 0.1
done
session_ms=$(($(now_ms) - t0))

# Each launch runs the desktop entry's command as the menu does: in its own session (setsid: no
# controlling terminal), stdin /dev/null, output to a file (a desktop sends it to the journal).
windows() { DISPLAY=$DISPLAY_NAME xwininfo -root -tree 2>/dev/null | grep -c '"Poppydesk": (' || true; }

t0=$(now_ms)
"${SESSION[@]}" setsid "${EXEC_ARGV[@]}" </dev/null >"$OUT/launch1.log" 2>&1 &
APP_PID=$!
mapped_ms=""
for _ in $(seq 600); do
	if [ "$(windows)" -ge 1 ]; then mapped_ms=$(($(now_ms) - t0)); break; fi
	kill -0 "$APP_PID" 2>/dev/null || fail "the app exited before its window appeared (see $OUT/launch1.log)"
	sleep 0.05
done
[ -n "$mapped_ms" ] || fail "no Poppydesk window appeared within 30 s of the menu launch"
# env and setsid exec in place (setsid forks only as a process-group leader, which a background
# job of this script is not), so $! is the app itself.
[ "$(readlink "/proc/$APP_PID/exe")" = /usr/bin/poppydesk ] || fail "the launched process is $(readlink "/proc/$APP_PID/exe"), not /usr/bin/poppydesk"
[ "$(ps -o tty= -p "$APP_PID" | tr -d ' ')" = "?" ] || fail "the app has a controlling terminal"
[ "$(readlink "/proc/$APP_PID/fd/0")" = /dev/null ] || fail "the app's stdin is not /dev/null"
LOG="$HOME_DIR/.local/state/poppydesk/poppydesk.log"
ready_ms=""
for _ in $(seq 600); do
	if [ -f "$LOG" ] && grep -q '"msg":"window frontend ready"' "$LOG"; then ready_ms=$(($(now_ms) - t0)); break; fi
	sleep 0.05
done
[ -n "$ready_ms" ] || fail "the window did not show data from Go within 30 s (log: $LOG)"
for d in .local/share/poppydesk .config/poppydesk .local/state/poppydesk; do
	[ -d "$HOME_DIR/$d" ] || fail "the app did not make its folder ~/$d"
	[ "$(stat -c %a "$HOME_DIR/$d")" = 700 ] || fail "~/$d is not private (mode $(stat -c %a "$HOME_DIR/$d"))"
done
WID=$(DISPLAY=$DISPLAY_NAME xwininfo -root -tree | awk '/"Poppydesk": \(/ { print $1; exit }')
wm_class=$(DISPLAY=$DISPLAY_NAME xprop -id "$WID" WM_CLASS | sed 's/^WM_CLASS(STRING) = //')
grep -q "\"$WMCLASS\"" <<<"$wm_class" || fail "the window's WM_CLASS is $wm_class, but the desktop entry says StartupWMClass=$WMCLASS"
# The window renders: a screenshot that is not blank (WebKit paints shortly after the data).
shown=""
for _ in $(seq 40); do
	DISPLAY=$DISPLAY_NAME import -window root "$OUT/screenshot.png"
	stddev=$(convert "$OUT/screenshot.png" -format '%[fx:standard_deviation]' info:)
	if awk -v s="$stddev" 'BEGIN { exit !(s > 0.02) }' && [ "$(identify -format '%k' "$OUT/screenshot.png")" -ge 32 ]; then shown=1; break; fi
	sleep 0.25
done
[ -n "$shown" ] || fail "the window stayed blank for 10 s (screenshot: $OUT/screenshot.png)"

# A second launch from the menu hands over to the first window and exits.
t0=$(now_ms)
second_rc=0
timeout 15 "${SESSION[@]}" setsid "${EXEC_ARGV[@]}" </dev/null >"$OUT/launch2.log" 2>&1 || second_rc=$?
second_ms=$(($(now_ms) - t0))
[ "$second_rc" -ne 124 ] || fail "a second launch did not exit within 15 s (the single-instance lock does not hold)"
# The second launch hands over before it builds anything (no state database, keyring or socket
# of its own) and exits 0.
[ "$second_rc" -eq 0 ] || fail "a second launch exited with $second_rc (see $OUT/launch2.log)"
! grep -qiE 'panic|fatal|error' "$OUT/launch2.log" || fail "a second launch reported an error: $(head -5 "$OUT/launch2.log")"
! grep -q 'another Poppydesk is already serving' "$LOG" || fail "the second launch built a Host of its own (it tried the model socket)"
kill -0 "$APP_PID" 2>/dev/null || fail "the first window exited after a second launch"
for _ in $(seq 100); do grep -q 'a second launch was redirected' "$LOG" && break; sleep 0.05; done
grep -q 'a second launch was redirected' "$LOG" || fail "the first window was not told about the second launch"
[ "$(windows)" = 1 ] || fail "$(windows) Poppydesk windows after two launches, want one"

# ---------------------------------------------------------------- MCP clients, through the installed binary
t0=$(now_ms)
declare -A FILE=([claude-code]=.claude.json [claude-desktop]=.config/Claude/claude_desktop_config.json
	[vscode]=.config/Code/User/mcp.json [cursor]=.cursor/mcp.json)
for c in claude-code claude-desktop vscode cursor; do
	"${SESSION[@]}" poppydesk mcp setup "$c" --yes </dev/null >"$OUT/setup-$c.txt" 2>&1 || { cat "$OUT/setup-$c.txt" >&2; fail "poppydesk mcp setup $c --yes failed"; }
	f="$HOME_DIR/${FILE[$c]}"
	[ -f "$f" ] || fail "poppydesk mcp setup $c wrote no $f"
	"${SESSION[@]}" node "$ROOT/scripts/mcp-config-check.mjs" "$c" "$f" /usr/bin/poppydesk-mcp >"$OUT/check-$c.json" 2>"$OUT/check-$c.stderr" || { cat "$OUT/check-$c.json" "$OUT/check-$c.stderr" >&2; fail "the $c configuration does not work"; }
	sum=$(sha256sum <"$f")
	"${SESSION[@]}" poppydesk mcp setup "$c" --yes </dev/null >"$OUT/setup-$c-again.txt" 2>&1 || fail "a second poppydesk mcp setup $c failed"
	grep -q 'already set up' "$OUT/setup-$c-again.txt" || fail "a second poppydesk mcp setup $c did not say 'already set up'"
	[ "$(sha256sum <"$f")" = "$sum" ] || fail "a second poppydesk mcp setup $c changed $f"
	printf '  %-15s %s\n' "$c" "$(cat "$OUT/check-$c.json")"
done
"${SESSION[@]}" poppydesk mcp setup generic </dev/null | grep -q '"command": "/usr/bin/poppydesk-mcp"' || fail "poppydesk mcp setup generic does not print /usr/bin/poppydesk-mcp"
mcp_ms=$(($(now_ms) - t0))

# A client whose HOME is another folder: the relay finds no app for that home, starts the window,
# which hands the launch to the running one; the client is told so, in those words.
INITIALIZE='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"package-test","version":"1"}}}'
mkdir -p "$tmp/other-home"
echo "$INITIALIZE" | "${SESSION[@]}" "HOME=$tmp/other-home" poppydesk-mcp >"$OUT/other-home.json" 2>"$OUT/other-home.stderr" || true
grep -q 'A Poppydesk window is already running, but its model interface does not answer' "$OUT/other-home.json" ||
	fail "a client with another HOME was not told that the window runs but does not answer there: $(cat "$OUT/other-home.json" "$OUT/other-home.stderr")"
! grep -q 'not running' "$OUT/other-home.json" || fail "the answer to a client with another HOME says 'not running': $(cat "$OUT/other-home.json")"
[ "$(windows)" = 1 ] || fail "$(windows) Poppydesk windows after a client with another HOME, want one"

# A clean end (SIGTERM, as at logout).
kill -TERM "$APP_PID"
for _ in $(seq 100); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$APP_PID" 2>/dev/null && fail "the app did not exit within 10 s of SIGTERM"
app_rc=0
wait "$APP_PID" || app_rc=$?
APP_PID=""
[ "$app_rc" -eq 0 ] || fail "the app exited with $app_rc after SIGTERM (see $OUT/launch1.log)"
grep -q '"msg":"shutdown complete"' "$LOG" || fail "the log does not record a clean shutdown"
cp "$LOG" "$OUT/poppydesk.log"

# ---------------------------------------------------------------- 4. MCP clients with no app running
t0=$(now_ms)
# The TypeScript SDK with its default environment has no display to start the window on.
"${SESSION[@]}" node "$ROOT/e2e/mcp/client.mjs" --default-env /usr/bin/poppydesk-mcp </dev/null >"$OUT/no-display.json" 2>"$OUT/no-display.stderr" || true
grep -q 'cannot be started from here: the MCP client started this relay without a display' "$OUT/no-display.json" ||
	fail "the TypeScript SDK client was not told that Poppydesk cannot start without a display: $(cat "$OUT/no-display.json" "$OUT/no-display.stderr")"
! grep -qE 'goroutine|panic' "$OUT/no-display.json" "$OUT/no-display.stderr" || fail "a Go stack trace reached the client: $(cat "$OUT/no-display.json" "$OUT/no-display.stderr")"
[ "$(windows)" = 0 ] || fail "a window opened although there was no display to open it on"
# Claude Code in the session's terminal: the relay starts the app, and the health check connects.
lines_before=$(wc -l <"$LOG")
(cd "$tmp" && "${SESSION[@]}" "$CLAUDE" mcp list) >"$OUT/claude-mcp-list.txt" 2>&1 || fail "claude mcp list failed: $(cat "$OUT/claude-mcp-list.txt")"
grep -qE '^poppydesk: /usr/bin/poppydesk-mcp .*Connected' "$OUT/claude-mcp-list.txt" || fail "claude mcp list does not show poppydesk connected: $(cat "$OUT/claude-mcp-list.txt")"
APP_PID=""
for p in $(pgrep -x poppydesk || true); do
	tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "HOME=$HOME_DIR" && APP_PID=$p
done
[ -n "$APP_PID" ] || fail "no app runs after claude mcp list started it"
[ "$(readlink "/proc/$APP_PID/exe")" = /usr/bin/poppydesk ] || fail "the app the relay started is $(readlink "/proc/$APP_PID/exe")"
for _ in $(seq 600); do [ "$(windows)" -ge 1 ] && break; sleep 0.05; done
[ "$(windows)" = 1 ] || fail "the app the relay started shows $(windows) windows, want one"
claude_ms=$(($(now_ms) - t0))
kill -TERM "$APP_PID"
for _ in $(seq 100); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$APP_PID" 2>/dev/null && fail "the app the relay started did not exit within 10 s of SIGTERM"
APP_PID=""
tail -n +"$((lines_before + 1))" "$LOG" | grep -q '"msg":"shutdown complete"' || fail "the app the relay started did not record a clean shutdown"
cp "$LOG" "$OUT/poppydesk.log"

# ---------------------------------------------------------------- 5. purge
t0=$(now_ms)
DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -q poppydesk >"$OUT/purge.log" 2>&1 || fail "apt-get remove --purge poppydesk failed (log: $OUT/purge.log)"
installed=0
purge_ms=$(($(now_ms) - t0))
dpkg-query -W -f='${Status}' poppydesk 2>/dev/null | grep -q installed && fail "poppydesk is still installed after the purge"
left=()
while IFS= read -r p; do [ -e "$p" ] || [ -L "$p" ] && left+=("$p"); done <"$tmp/files"
[ "${#left[@]}" = 0 ] || fail "files of the package left after the purge: ${left[*]}"
while IFS= read -r d; do
	[ -d "$d" ] || continue
	dpkg -S "$d" >/dev/null 2>&1 && continue # another package's directory
	[ -n "$(ls -A "$d")" ] && continue      # holds files of others
	fail "the purge left the empty directory $d, which no package owns"
done <"$tmp/dirs"
[ -d "$HOME_DIR/.local/share/poppydesk" ] || fail "the purge removed the user's data folder"

echo "package-test: OK ($DEB, $nfiles files)"
printf '  %-38s %s\n' \
	"apt-get install ms" "$install_ms" \
	"desktop session (Xvfb, bus, keyring) ms" "$session_ms" \
	"menu launch to window mapped ms" "$mapped_ms" \
	"menu launch to data shown ms" "$ready_ms" \
	"second launch to exit ms (status)" "$second_ms ($second_rc)" \
	"mcp setup + check, 4 clients ms" "$mcp_ms" \
	"no-display answer + claude mcp list starting the app ms" "$claude_ms" \
	"apt-get remove --purge ms" "$purge_ms" \
	"window WM_CLASS" "$wm_class" \
	"whole package test ms" "$(($(now_ms) - t_all))" \
	"screenshot" "$OUT/screenshot.png"
