#!/usr/bin/env bash
# Opens the Poppydesk window with the built-in reference Company. Without a display (a server, a
# container), it runs the window under Xvfb and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin/poppydesk
[ -x "$bin" ] || { echo "demo: $bin is missing; run 'make demo' (it builds it)" >&2; exit 1; }
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "demo: no display found; running the window under Xvfb (screenshots: import -display \$DISPLAY -window root shot.png)" >&2
  exec xvfb-run -a -s "-screen 0 1280x800x24" "$bin" demo "$@"
fi
exec "$bin" demo "$@"
