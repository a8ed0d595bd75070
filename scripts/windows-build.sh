#!/usr/bin/env bash
# Builds Poppydesk for Windows on this Linux and checks what it built:
#
#   scripts/windows-build.sh        # VERSION=... overrides `git describe`
#
# Writes build/bin/poppydesk.exe (the desktop binary: `wails build -platform windows/amd64`, no
# cgo, Wails' Go WebView2 loader), build/bin/poppydesk-mcp.exe (the program MCP clients start,
# cmd/poppydesk-mcp) and build/bin/poppydesk-VERSION-windows-amd64-installer.exe (Wails' NSIS
# target, build/windows/installer/project.nsi, Debian's makensis), which installs both; all with
# the version from `git describe`. The frontend is built first unless frontend/dist is there already
# (scripts/test.sh builds it in an earlier step).
#
# Then it checks, without a Windows machine: the installer holds exactly the two programs built
# (7-Zip reads NSIS installers), its uninstaller and the WebView2 bootstrapper; the binary is a
# Windows GUI program for amd64; and under Wine (scripts/wine-prefix.sh) the programs the
# installer holds answer `version` (`--version`) with that version, `help` lists the subcommands,
# and `mcp setup generic` names the installed poppydesk-mcp.exe. The window itself needs WebView2, which Wine
# does not have, and the installer is a 32-bit program, which Debian's wine64 alone cannot run:
# neither is started here.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p out
export PATH="$(go env GOPATH)/bin:$PATH"
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
say() { printf 'windows-build: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }
t0=$(date +%s)

for tool in wails makensis 7z x86_64-w64-mingw32-gcc; do
  command -v "$tool" >/dev/null || fail "$tool is missing; run scripts/bootstrap.sh"
done

# -trimpath keeps this machine's folders out of the binaries and, used for both programs, lets the
# second reuse the first one's compiled standard library and dependencies.
flags=(-platform windows/amd64 -m -nosyncgomod -nsis -trimpath -ldflags "-X main.version=$VERSION")
# The frontend and its bindings do not depend on the target: reuse them when they are built.
[ -f frontend/dist/index.html ] && flags+=(-s -skipbindings)
exe=build/bin/poppydesk.exe
relay=build/bin/poppydesk-mcp.exe
installer=build/bin/poppydesk-$VERSION-windows-amd64-installer.exe
rm -f "$exe" "$relay" build/bin/poppydesk-*-windows-*-installer.exe
mkdir -p build/bin
GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$relay" ./cmd/poppydesk-mcp ||
  fail "go build of $relay"
POPPYDESK_VERSION=$VERSION wails build "${flags[@]}" > out/windows-build.log 2>&1 ||
  { tail -30 out/windows-build.log; fail "wails build (see out/windows-build.log)"; }
[ -f "$exe" ] || fail "wails build wrote no $exe"
[ -f "$installer" ] || fail "wails build wrote no $installer (is makensis installed?)"
tb=$(date +%s)
say "built $exe ($(( $(stat -c %s "$exe") / 1048576 )) MiB) and $installer ($(( $(stat -c %s "$installer") / 1048576 )) MiB) in $(( tb - t0 )) s"

# The binary: a PE32+ image for amd64 (machine 0x8664) of the Windows GUI subsystem (2), built
# with the version and the desktop (window) build tag.
pe=$(od -An -tu4 -j60 -N4 "$exe" | tr -d ' ')
[ "$(od -An -tx1 -j"$pe" -N6 "$exe" | tr -d ' ')" = 504500006486 ] || fail "$exe is not a PE image for amd64"
[ "$(od -An -tu2 -j$((pe + 24 + 68)) -N2 "$exe" | tr -d ' ')" = 2 ] || fail "$exe is not a Windows GUI program"
# -trimpath leaves -ldflags out of the build information, so the version is checked under Wine
# below, where the program itself answers it.
info=$(go version -m "$exe")
grep -q -- "-trimpath=true" <<<"$info" || fail "$exe was not built with -trimpath"
grep -q -- "-tags=desktop," <<<"$info" || fail "$exe was not built with the window (build tag desktop)"
say "the binary is a Windows GUI program for amd64, with the window"

# The installer: NSIS, holding the binary byte for byte, the uninstaller and the WebView2
# bootstrapper (the installer fetches the WebView2 runtime where Windows lacks it).
listing=$(7z l "$installer")
grep -q '^Type = Nsis' <<<"$listing" || fail "$installer is not an NSIS installer"
for f in poppydesk.exe poppydesk-mcp.exe uninstall.exe MicrosoftEdgeWebview2Setup.exe; do
  grep -q "$f\$" <<<"$listing" || fail "$installer does not hold $f"
done
x=$(mktemp -d)
trap 'rm -rf "$x"' EXIT
7z x -o"$x" "$installer" poppydesk.exe poppydesk-mcp.exe >/dev/null
cmp -s "$x/poppydesk.exe" "$exe" || fail "the poppydesk.exe in $installer is not the binary just built"
cmp -s "$x/poppydesk-mcp.exe" "$relay" || fail "the poppydesk-mcp.exe in $installer is not the one just built"
say "the installer holds the two programs just built, its uninstaller and the WebView2 bootstrapper"

# The binary the installer holds runs under Wine: `version` and `help`.
prefix=$(scripts/wine-prefix.sh "$PWD/out/windows/prefix")
WINE64=${WINE64:-$(command -v wine64 || echo /usr/lib/wine/wine64)}
wine() { env -i HOME="$HOME" PATH=/usr/bin:/bin WINEPREFIX="$prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" "$WINE64" "$@"; }
got=$(wine "$x/poppydesk.exe" version 2>&1) || fail "poppydesk.exe version under Wine: $got"
[[ "$got" == "poppydesk $VERSION "* ]] || fail "poppydesk.exe version says \"$got\", want poppydesk $VERSION"
help=$(wine "$x/poppydesk.exe" help 2>&1) || fail "poppydesk.exe help under Wine: $help"
grep -qE '^  (version|mcp|demo) ' <<<"$help" || fail "poppydesk.exe help does not list the subcommands: $help"
rgot=$(wine "$x/poppydesk-mcp.exe" --version 2>&1) || fail "poppydesk-mcp.exe --version under Wine: $rgot"
[[ "$rgot" == "poppydesk-mcp $VERSION"* ]] || fail "poppydesk-mcp.exe --version says \"$rgot\", want poppydesk-mcp $VERSION"
snippet=$(wine "$x/poppydesk.exe" mcp setup generic 2>&1 </dev/null) || fail "poppydesk.exe mcp setup generic under Wine: $snippet"
grep -qE '"command": "[A-Za-z]:[^"]*\\\\poppydesk-mcp\.exe"' <<<"$snippet" ||
  fail "poppydesk.exe mcp setup generic does not name the poppydesk-mcp.exe beside it: $snippet"
WINEPREFIX=$prefix "$(dirname "$WINE64")/wineserver" --kill 2>/dev/null || true
rm -rf "$prefix"
say "under Wine the installed programs answer: $got; $rgot; mcp setup names poppydesk-mcp.exe beside poppydesk.exe"
say "done in $(( $(date +%s) - t0 )) s (wails build and NSIS $(( tb - t0 )) s)"
