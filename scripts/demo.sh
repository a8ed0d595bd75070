#!/usr/bin/env bash
# Opens the Poppydesk window with the built-in reference Company (`poppydesk demo`) and says
# where things are: the Company's domain, the model's MCP socket (for `poppydesk example-agent`
# or an MCP client), and the log file. Without a display (a server, a container) it starts a
# private Xvfb display and says how to look at the window from another shell.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin/poppydesk
[ -x "$bin" ] || { echo "demo: $bin is missing; run 'make demo' (it builds it)" >&2; exit 1; }

log="${XDG_STATE_HOME:-$HOME/.local/state}/poppydesk/poppydesk.log"
start_line=0
[ -f "$log" ] && start_line=$(wc -l <"$log")

xvfb_pid="" app_pid=""
cleanup() {
	[ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null || true
	[ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

headless=0
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
	command -v Xvfb >/dev/null || { echo "demo: no display, and Xvfb is missing (apt-get install xvfb)" >&2; exit 1; }
	fifo=$(mktemp -u)
	mkfifo "$fifo"
	Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>"$fifo" >/dev/null 2>&1 &
	xvfb_pid=$!
	read -r n <"$fifo"
	rm -f "$fifo"
	export DISPLAY=":$n"
	headless=1
fi

run=("$bin" demo "$@")
if [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ] && command -v dbus-run-session >/dev/null; then
	run=(dbus-run-session -- "${run[@]}")
fi
"${run[@]}" &
app_pid=$!

# The demo's facts, from its log once the window shows data.
for _ in $(seq 600); do
	if [ -f "$log" ] && tail -n +"$((start_line + 1))" "$log" | grep -q '"msg":"window frontend ready"'; then break; fi
	kill -0 "$app_pid" 2>/dev/null || { wait "$app_pid"; exit $?; }
	sleep 0.05
done
fresh=$(tail -n +"$((start_line + 1))" "$log" 2>/dev/null || true)
domain=$(grep -o 'https://auth\.shop\.localhost:[0-9]*' <<<"$fresh" | head -1 | sed 's|https://auth\.||')
socket=$(grep -o '"msg":"model interface listening","socket":"[^"]*"' <<<"$fresh" | head -1 | sed 's/.*"socket":"//; s/"$//')
echo "Poppydesk demo is running."
echo "  Reference Company:  ${domain:-(see the window)}"
echo "  Model socket (MCP): ${socket:-(not listening; the Inspector says why)}"
[ -n "$domain" ] && [ -n "$socket" ] && echo "  Try the example agent:  $bin example-agent --company $domain --socket $socket"
echo "  Log file:           $log"
if [ "$headless" = 1 ]; then
	echo "  No display was found, so the window runs on the private X display $DISPLAY."
	echo "  To see it, run in another shell:"
	echo "    DISPLAY=$DISPLAY import -window root poppydesk.png    # a screenshot (ImageMagick)"
fi
echo "Close the window or press Ctrl+C to stop."
wait "$app_pid"
