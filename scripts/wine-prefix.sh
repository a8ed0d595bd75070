#!/usr/bin/env bash
# Makes a Wine prefix in which Windows builds of Go programs run, and prints its path:
#
#   scripts/wine-prefix.sh DIR     # DIR becomes a fresh prefix (whatever was there is removed)
#
# Debian 12's Wine 8.0 lacks bcryptprimitives.dll, whose ProcessPrng Go's Windows runtime needs
# at start ("fatal error: bcryptprimitives.dll not found"). scripts/wine/bcryptprimitives.c
# provides it; it is built here with gcc-mingw-w64-x86-64 and copied into the prefix's system32.
#
# `wineboot` takes a minute or more on 2 cores, so a pristine prefix with the DLL is kept in
# ${XDG_CACHE_HOME:-~/.cache}/poppydesk/, keyed by the Wine version and the DLL's source, and DIR
# is a copy of it: its program files (about 600 MB of .dll, .exe, .nls…, which Wine only reads)
# hard-linked, every other file (the registry, .ini files, about 9 MB) copied. Nothing of one
# run reaches the next.
# Remove that cache folder to start over. Use the prefix with WINEPREFIX=DIR WINEDEBUG=-all and
# the wine64 binary this script finds ($WINE64, or /usr/lib/wine/wine64: Debian's wine64 puts no
# wrapper on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/wine-prefix.sh DIR}

say() { printf 'wine-prefix: %s\n' "$*" >&2; }
WINE64=${WINE64:-$(command -v wine64 || echo /usr/lib/wine/wine64)}
WINESERVER=${WINESERVER:-$(dirname "$WINE64")/wineserver}
for tool in "$WINE64" "$WINESERVER"; do
  [ -x "$tool" ] || { say "$tool is missing: install the Debian package wine64 (scripts/bootstrap.sh does)"; exit 1; }
done
command -v x86_64-w64-mingw32-gcc >/dev/null || { say "x86_64-w64-mingw32-gcc is missing: install gcc-mingw-w64-x86-64"; exit 1; }

src=scripts/wine/bcryptprimitives.c
key=$( { "$WINE64" --version; cat "$src"; } | sha256sum | cut -c1-12)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/poppydesk/wine-prefix-$key
if [ ! -f "$cache/.poppydesk-prefix" ]; then
  t0=$(date +%s)
  say "creating a pristine prefix in $cache (once per Wine version)"
  tmp=$cache.tmp.$$
  rm -rf "$tmp"
  mkdir -p "$(dirname "$cache")"
  # No Mono or Gecko: no test needs them, and installing them would want the network.
  WINEPREFIX=$tmp WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" "$WINE64" wineboot --init >/dev/null 2>&1
  WINEPREFIX=$tmp "$WINESERVER" --wait
  x86_64-w64-mingw32-gcc -shared -O2 -s -Wall -Werror -o "$tmp/drive_c/windows/system32/bcryptprimitives.dll" "$src" -ladvapi32
  touch "$tmp/.poppydesk-prefix"
  rm -rf "$cache"
  mv "$tmp" "$cache"
  say "pristine prefix ready in $(( $(date +%s) - t0 )) s"
fi
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
cp -al "$cache" "$dir"
(cd "$cache" && find . -type f ! -iregex '.*\.\(dll\|exe\|drv\|sys\|ocx\|cpl\|acm\|ax\|tlb\|ds\|com\|nls\)' -print0) |
  while IFS= read -r -d '' f; do cp --remove-destination -p "$cache/$f" "$dir/$f"; done
echo "$dir"
