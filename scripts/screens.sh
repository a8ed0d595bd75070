#!/usr/bin/env bash
# screens.sh [light|dark] [OUT]
#
# Screenshots of every section of the real desktop window (the release binary, `poppydesk demo`)
# under a private Xvfb, in the light or the dark GTK theme, as OUT/SECTION-THEME.png (OUT
# defaults to out/screens). It walks the sidebar with the keyboard as a user would (Tab to the
# navigation, Down and Return per section). Run it inside a keyring session:
#
#   bash scripts/with-keyring.sh scripts/screens.sh dark
#
# Needs the release binary (make build), Xvfb, xdotool and imagemagick (scripts/bootstrap.sh).
set -euo pipefail
theme=${1:-light}
out=${2:-out/screens}
case "$theme" in light | dark) ;; *) echo "usage: $0 [light|dark] [OUT]" >&2; exit 2 ;; esac
BIN=${POPPYDESK_BIN:-build/bin/poppydesk}
[ -x "$BIN" ] || { echo "screens.sh: $BIN is missing; run make build" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
app="" xvfb=""
cleanup() {
	[ -n "$app" ] && kill -TERM "$app" 2>/dev/null && wait "$app" 2>/dev/null || true
	[ -n "$xvfb" ] && kill "$xvfb" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_DATA_HOME=$tmp/data XDG_CONFIG_HOME=$tmp/config XDG_STATE_HOME=$tmp/state XDG_CACHE_HOME=$tmp/cache
display=:$((100 + RANDOM % 400))
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
export DISPLAY=$display
for _ in $(seq 50); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
[ "$theme" = dark ] && export GTK_THEME=Adwaita:dark
"$BIN" demo >"$tmp/demo.out" 2>"$tmp/demo.err" &
app=$!
log=$XDG_STATE_HOME/poppydesk/poppydesk.log
for _ in $(seq 600); do [ -f "$log" ] && grep -q '"msg":"window frontend ready"' "$log" && break; sleep 0.05; done
grep -q '"msg":"window frontend ready"' "$log" || { echo "screens.sh: the window did not show data within 30 s" >&2; exit 1; }
sleep 2 # the demo's sign-in and first lists
wid=$(xdotool search --name '^Poppydesk$' | head -1)
xdotool windowfocus --sync "$wid" 2>/dev/null || true
sections=(approvals companies signin conversations browser inspector settings)
xdotool key Tab && sleep 0.2 && xdotool key Tab && sleep 0.3 # the skip link, then the navigation
for i in "${!sections[@]}"; do
	if [ "$i" -gt 0 ]; then xdotool key Down && sleep 0.2 && xdotool key Return; fi
	sleep 1.2
	import -window root "$out/${sections[$i]}-$theme.png"
	echo "$out/${sections[$i]}-$theme.png"
done
