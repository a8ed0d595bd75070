#!/usr/bin/env bash
# Desktop smoke test of the release binary.
#
# Builds build/bin/poppydesk with `wails build -m -tags webkit2_41` (-m skips the `go mod tidy` Wails
# would otherwise run on the shared go.mod; SMOKE_SKIP_BUILD=1 skips the build),
# starts it under a private Xvfb display and a private D-Bus session bus (for the single-instance
# lock), waits for its window, takes a screenshot, and fails if the window is missing or the
# screenshot is blank. It also checks that a second launch exits and leaves the first window,
# and that SIGTERM shuts the app down cleanly. It prints: build time, binary size, cold start
# (launch → window mapped, and → frontend loaded), and the idle resident memory.
#
# Then it opens the demo (`poppydesk demo`) and measures, 10 times, how long an approval takes
# from the engine's event to its dialog painted in the real window: the example agent asks for
# the jacket exchange through the model socket, the Host logs when it sends the event and the
# window reports the painted dialog (fronts.Approvals.DialogShown), both on the Host's clock
# ("since_event_ms"); Escape closes the dialog before the next one. It prints the median and
# the range, and the idle memory of the demo window after 10 s, without and then with the
# model's controlled browser open on the reference Company's website.
#
# Needs: Xvfb (xvfb), xwininfo (x11-utils), import/convert (imagemagick), dbus-daemon, xdotool,
# node (for the MCP client that opens the controlled browser) and Chromium.
# Output (screenshot, logs): $SMOKE_OUT, default out/smoke.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${SMOKE_OUT:-out/smoke}
BIN=build/bin/poppydesk
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

need() {
	command -v "$1" >/dev/null 2>&1 || { echo "smoke: '$1' is missing; install the Debian package $2" >&2; exit 1; }
}
need Xvfb xvfb
need xwininfo x11-utils
need import imagemagick
need convert imagemagick
need dbus-daemon dbus-daemon
need xdotool xdotool
need node nodejs

tmp=$(mktemp -d)
APP_PID="" XVFB_PID="" DBUS_PID=""
cleanup() {
	local rc=$?
	for p in $APP_PID $XVFB_PID $DBUS_PID; do
		kill "$p" 2>/dev/null || true
	done
	sleep 0.3
	for p in $APP_PID $XVFB_PID $DBUS_PID; do
		kill -9 "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }

# 1. Build.
build_ms="skipped"
if [ "${SMOKE_SKIP_BUILD:-0}" != 1 ]; then
	WAILS=${WAILS:-$(command -v wails || echo "$(go env GOPATH)/bin/wails")}
	[ -x "$WAILS" ] || fail "the Wails CLI is missing ($WAILS); build it as docs/PLATFORM.md says"
	t0=$(now_ms)
	if ! "$WAILS" build -m -tags webkit2_41 >"$OUT/build.log" 2>&1; then
		tail -40 "$OUT/build.log" >&2
		fail "wails build failed (full log: $OUT/build.log)"
	fi
	build_ms=$(($(now_ms) - t0))
fi
[ -x "$BIN" ] || fail "$BIN does not exist; run without SMOKE_SKIP_BUILD=1"
bin_size=$(stat -c %s "$BIN")

# 2. A private X display and session bus, and fresh per-user directories.
exec 3>"$tmp/display"
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp >"$OUT/xvfb.log" 2>&1 &
XVFB_PID=$!
exec 3>&-
for _ in $(seq 100); do [ -s "$tmp/display" ] && break; sleep 0.1; done
[ -s "$tmp/display" ] || fail "Xvfb did not start (see $OUT/xvfb.log)"
export DISPLAY=":$(head -n1 "$tmp/display")"

dbus-daemon --session --fork --nopidfile --print-address=4 --print-pid=5 4>"$tmp/dbus.addr" 5>"$tmp/dbus.pid"
DBUS_PID=$(head -n1 "$tmp/dbus.pid")
export DBUS_SESSION_BUS_ADDRESS=$(head -n1 "$tmp/dbus.addr")

# A HOME of its own too: the app's model interface is found by the user and the home folder, and
# another Poppydesk of this user may be running.
export HOME="$tmp/home"
mkdir -p "$HOME"
export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" XDG_STATE_HOME="$tmp/state" XDG_CACHE_HOME="$tmp/cache"
LOG="$XDG_STATE_HOME/poppydesk/poppydesk.log"

# 3. Launch and wait for the window.
t0=$(now_ms)
"$BIN" >"$OUT/app.stdout" 2>"$OUT/app.stderr" &
APP_PID=$!
mapped_ms=""
for _ in $(seq 600); do
	if xwininfo -root -tree 2>/dev/null | grep -q '"Poppydesk": ("poppydesk"'; then
		mapped_ms=$(($(now_ms) - t0))
		break
	fi
	kill -0 "$APP_PID" 2>/dev/null || fail "the app exited before its window appeared (see $OUT/app.stderr)"
	sleep 0.05
done
[ -n "$mapped_ms" ] || fail "no window named Poppydesk appeared within 30 s"
ready_ms=""
for _ in $(seq 600); do
	# The window calls fronts.Shell.FrontendReady once it shows data loaded from Go: this proves
	# that calls from the page reach Go under the window's Content-Security-Policy.
	if [ -f "$LOG" ] && grep -q '"msg":"window frontend ready"' "$LOG"; then
		ready_ms=$(($(now_ms) - t0))
		break
	fi
	sleep 0.05
done
[ -n "$ready_ms" ] || fail "the frontend did not show data from Go within 30 s (log: $LOG)"

# 4. Idle memory after ~3 s: the app and its WebKit child processes.
sleep 3
kill -0 "$APP_PID" 2>/dev/null || fail "the app exited while idle (see $OUT/app.stderr)"
rss_main=$(awk '/^VmRSS/ {print $2}' "/proc/$APP_PID/status")
rss_total=$rss_main
for c in $(pgrep -P "$APP_PID" || true); do
	r=$(awk '/^VmRSS/ {print $2}' "/proc/$c/status" 2>/dev/null || echo 0)
	rss_total=$((rss_total + r))
done

# 5. Screenshot: the window must be there and not blank.
import -window root "$OUT/screenshot.png"
xwininfo -name Poppydesk >"$OUT/window.txt" 2>&1 || fail "xwininfo cannot find the Poppydesk window"
stddev=$(convert "$OUT/screenshot.png" -format '%[fx:standard_deviation]' info:)
colours=$(identify -format '%k' "$OUT/screenshot.png")
awk -v s="$stddev" 'BEGIN { exit !(s > 0.02) }' || fail "the screenshot is blank (standard deviation $stddev)"
[ "$colours" -ge 32 ] || fail "the screenshot has only $colours colours; the window did not render"

# 6. A second launch hands over to the first window and exits.
second_rc=0
timeout 15 "$BIN" >"$OUT/second.stdout" 2>&1 || second_rc=$?
[ "$second_rc" -ne 124 ] || fail "a second launch did not exit within 15 s (the single-instance lock does not work)"
[ "$second_rc" -eq 0 ] || fail "a second launch exited with $second_rc (see $OUT/second.stdout)"
grep -q 'already running' "$OUT/second.stdout" || fail "a second launch did not say that Poppydesk already runs"
kill -0 "$APP_PID" 2>/dev/null || fail "the first window exited after a second launch"
grep -q 'a second launch was redirected' "$LOG" || fail "the first window was not told about the second launch"

# 7. Graceful shutdown on SIGTERM.
kill -TERM "$APP_PID"
for _ in $(seq 100); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$APP_PID" 2>/dev/null; then fail "the app did not exit within 10 s of SIGTERM"; fi
app_rc=0
wait "$APP_PID" || app_rc=$?
APP_PID=""
[ "$app_rc" -eq 0 ] || fail "the app exited with code $app_rc after SIGTERM (see $OUT/app.stderr)"
grep -q '"msg":"shutdown complete"' "$LOG" || fail "the log does not record a clean shutdown"
cp "$LOG" "$OUT/poppydesk.log"

# 8. The demo: the approval dialog's latency in the real window, and its idle memory.
export XDG_DATA_HOME="$tmp/demo-data" XDG_CONFIG_HOME="$tmp/demo-config" XDG_STATE_HOME="$tmp/demo-state" XDG_CACHE_HOME="$tmp/demo-cache"
DLOG="$XDG_STATE_HOME/poppydesk/poppydesk.log"
"$BIN" demo >"$OUT/demo.stdout" 2>"$OUT/demo.stderr" &
APP_PID=$!
for _ in $(seq 600); do
	[ -f "$DLOG" ] && grep -q '"msg":"window frontend ready"' "$DLOG" && break
	kill -0 "$APP_PID" 2>/dev/null || fail "the demo exited before its window was ready (see $OUT/demo.stderr)"
	sleep 0.05
done
grep -q '"msg":"window frontend ready"' "$DLOG" || fail "the demo window did not show data from Go within 30 s (log: $DLOG)"
socket=$(grep -o '"msg":"model interface listening","socket":"[^"]*"' "$DLOG" | head -1 | sed 's/.*"socket":"//; s/"$//')
domain=$(grep -o 'https://auth\.shop\.localhost:[0-9]*' "$DLOG" | head -1 | sed 's|https://auth\.||')
[ -S "$socket" ] || fail "the demo's model socket was not found in its log"
[ -n "$domain" ] || fail "the demo's reference Company was not found in its log"
wid=$(xdotool search --name '^Poppydesk$' | head -1)
[ -n "$wid" ] || fail "xdotool cannot find the demo window"

# The demo window idles 10 s before the first measure of its memory.
rss_of() {
	local total=0 r
	for p in "$@"; do
		r=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
		total=$((total + r))
	done
	echo "$total"
}
# PSS shares each shared page among the processes that map it (a sum of RSS counts it in each).
pss_of() {
	local total=0 r
	for p in "$@"; do
		r=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
		total=$((total + ${r:-0}))
	done
	echo "$total"
}
tree_of() { echo "$1"; for c in $(pgrep -P "$1" || true); do tree_of "$c"; done; }
sleep 10
rss_demo=$(rss_of $(tree_of "$APP_PID"))
pss_demo=$(pss_of $(tree_of "$APP_PID"))

latencies=()
for i in $(seq 10); do
	before=$(grep -c '"msg":"approval dialog shown"' "$DLOG" || true)
	timeout 30 "$BIN" example-agent --company "$domain" --socket "$socket" --wait 1s >"$OUT/agent-$i.out" 2>&1 &
	agent=$!
	shown=""
	for _ in $(seq 300); do
		if [ "$(grep -c '"msg":"approval dialog shown"' "$DLOG" || true)" -gt "$before" ]; then
			shown=$(grep '"msg":"approval dialog shown"' "$DLOG" | tail -1)
			break
		fi
		sleep 0.05
	done
	[ -n "$shown" ] || fail "approval $i: the dialog was not reported on screen within 15 s (log: $DLOG)"
	ms=$(echo "$shown" | grep -o '"since_event_ms":[0-9.]*' | cut -d: -f2)
	[ -n "$ms" ] || fail "approval $i: the window's report has no time since the event: $shown"
	latencies+=("$ms")
	[ "$i" = 1 ] && import -window root "$OUT/demo-dialog.png"
	# Escape closes the dialog without deciding; the agent stops waiting after 1 s.
	xdotool windowfocus --sync "$wid" key Escape 2>/dev/null || xdotool key Escape
	wait "$agent" || true
done
sorted=$(printf '%s\n' "${latencies[@]}" | sort -n)
median=$(echo "$sorted" | awk '{a[NR]=$1} END {print (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2}')
lat_min=$(echo "$sorted" | head -1)
lat_max=$(echo "$sorted" | tail -1)

# The model's controlled browser on the reference Company's website, then 10 s idle.
if node scripts/mcp-call.mjs browser_open "{\"company\":\"$domain\",\"url\":\"https://$domain/\"}" "$BIN" mcp --socket "$socket" --no-start >"$OUT/browser_open.json" 2>"$OUT/browser_open.err"; then
	sleep 10
	rss_browser=$(rss_of $(tree_of "$APP_PID"))
	pss_browser=$(pss_of $(tree_of "$APP_PID"))
else
	rss_browser="failed (see $OUT/browser_open.err)"
	pss_browser=""
fi
kill -TERM "$APP_PID"
for _ in $(seq 100); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.1; done
wait "$APP_PID" 2>/dev/null || true
APP_PID=""
cp "$DLOG" "$OUT/demo.log"

echo "smoke: OK"
printf '  %-44s %s\n' \
	"build (wails build) ms" "$build_ms" \
	"binary size bytes" "$bin_size" \
	"cold start to window mapped ms" "$mapped_ms" \
	"cold start to data shown ms" "$ready_ms" \
	"idle RSS, app process KiB" "$rss_main" \
	"idle RSS, app + WebKit KiB" "$rss_total" \
	"approval event to dialog painted, median ms" "$median" \
	"  of 10, min and max ms" "$lat_min $lat_max" \
	"demo idle 10 s RSS, app + children KiB" "$rss_demo" \
	"  PSS KiB" "$pss_demo" \
	"  with the controlled browser open, RSS KiB" "$rss_browser" \
	"  with the controlled browser open, PSS KiB" "$pss_browser" \
	"screenshot std deviation" "$stddev" \
	"screenshot colours" "$colours" \
	"screenshot" "$OUT/screenshot.png"
