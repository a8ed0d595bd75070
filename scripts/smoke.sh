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
# Needs: Xvfb (xvfb), xwininfo (x11-utils), import/convert (imagemagick), dbus-daemon.
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
	[ -x "$WAILS" ] || fail "the Wails CLI is missing ($WAILS); build it as PLATFORM-NOTES.md says"
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
	# The window calls app.Shell.FrontendReady once it shows data loaded from Go: this proves
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

echo "smoke: OK"
printf '  %-34s %s\n' \
	"build (wails build) ms" "$build_ms" \
	"binary size bytes" "$bin_size" \
	"cold start to window mapped ms" "$mapped_ms" \
	"cold start to data shown ms" "$ready_ms" \
	"idle RSS, app process KiB" "$rss_main" \
	"idle RSS, app + WebKit KiB" "$rss_total" \
	"screenshot std deviation" "$stddev" \
	"screenshot colours" "$colours" \
	"screenshot" "$OUT/screenshot.png"
