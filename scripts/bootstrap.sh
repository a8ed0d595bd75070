#!/usr/bin/env bash
# Installs everything Poppydesk needs to build, run and test, and nothing else. Idempotent: a
# second run only checks. Works as root or through sudo on Debian 12 and Ubuntu 24.04; on other
# systems it prints exactly what to install and stops.
#
#   scripts/bootstrap.sh            # system packages, Wails CLI, Go modules, npm packages (frontend/,
#                                   # e2e/mcp/, agentcore/refcompany/testdata/npm/)
#   scripts/bootstrap.sh --check    # only report what is missing (exit 1 if anything is)
set -euo pipefail
cd "$(dirname "$0")/.."

WAILS_VERSION=v2.9.2
# golang.org/x/tools pinned by wails v2.9.2 does not compile on Go >= 1.24; a newer one does.
WAILS_XTOOLS=v0.52.0
GO_MIN=1.24
NODE_MIN=20

# appstream, desktop-file-utils and man-db check the Debian package's metadata (scripts/package-test.sh);
# xdg-utils is a runtime recommendation of the package, installed here so that installing the
# package in the tests fetches nothing. systemd gives systemd-analyze, which checks the operator's
# unit (app/cli TestOperatorServiceUnit); no running systemd is needed. libxml2-utils (xmllint)
# validates check's JUnit reports against the Jenkins JUnit schema (app/cli). openbox and
# at-spi2-core give e2e/realwindow a window manager and the accessibility bus. nsis (makensis)
# builds the Windows installer and p7zip-full (7z) reads it back (scripts/windows-build.sh); wine64
# runs the Windows test binaries and the Windows build, and gcc-mingw-w64-x86-64 builds the DLL
# they need under Wine (scripts/wine-prefix.sh, scripts/winetest).
APT_PACKAGES=(build-essential pkg-config libgtk-3-dev libwebkit2gtk-4.1-dev xvfb xauth x11-utils xdotool
  chromium gnome-keyring dbus-daemon libsecret-tools imagemagick appstream desktop-file-utils man-db
  xdg-utils postgresql systemd libxml2-utils openbox at-spi2-core nsis p7zip-full wine64 gcc-mingw-w64-x86-64)

check_only=0
[ "${1:-}" = "--check" ] && check_only=1

say() { printf 'bootstrap: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
ts() { date +%s; }
start=$(ts)

# ---------------------------------------------------------------- Go and Node (never installed here)
command -v go >/dev/null || die "Go is missing. Install Go >= $GO_MIN from your distribution or go.dev, then run this again."
gov=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$GO_MIN" "$gov" | sort -V | head -1)" != "$GO_MIN" ]; then
  die "Go $gov is too old; Poppydesk needs Go >= $GO_MIN."
fi
command -v node >/dev/null || die "Node.js is missing. Install Node.js >= $NODE_MIN (with npm), then run this again."
nodev=$(node -p 'process.versions.node.split(".")[0]')
[ "$nodev" -ge "$NODE_MIN" ] || die "Node.js $nodev is too old; Poppydesk needs Node.js >= $NODE_MIN."

# ---------------------------------------------------------------- system packages
missing=()
if command -v dpkg-query >/dev/null; then
  for p in "${APT_PACKAGES[@]}"; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$st" = "install ok installed" ] || missing+=("$p")
  done
else
  say "This is not a Debian-based system. Install the equivalents of these packages yourself:"
  say "  a C toolchain and pkg-config, GTK 3 and WebKitGTK 4.1 development files, Xvfb and xauth,"
  say "  xwininfo (x11-utils), Chromium, gnome-keyring (or another Secret Service), dbus-daemon,"
  say "  secret-tool (libsecret), ImageMagick, appstreamcli, desktop-file-validate, man, xdg-open,"
  say "  xmllint (libxml2), PostgreSQL (its server binaries: initdb, pg_ctl), NSIS (makensis), 7-Zip (7z),"
  say "  Wine (wine64) and MinGW-w64's gcc for x86_64 (x86_64-w64-mingw32-gcc)."
  say "Debian names: ${APT_PACKAGES[*]}"
  [ "$check_only" = 1 ] && exit 1
fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$check_only" = 1 ]; then
    say "missing system packages: ${missing[*]}"
    exit 1
  fi
  if [ "$(id -u)" = 0 ]; then SUDO=(); elif command -v sudo >/dev/null; then SUDO=(sudo); else
    die "Need root to install: ${missing[*]}. Run as root or install sudo, or run: apt-get install -y ${missing[*]}"
  fi
  say "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Never install dbus-x11: without a session bus it spawns autolaunch daemons that outlive runs.
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ---------------------------------------------------------------- Wails CLI (pinned)
GOBIN_DIR=$(go env GOPATH)/bin
export PATH="$GOBIN_DIR:$PATH"
if ! wails version 2>/dev/null | grep -q "^${WAILS_VERSION}"; then
  [ "$check_only" = 1 ] && { say "Wails CLI $WAILS_VERSION is missing"; exit 1; }
  say "building the Wails CLI $WAILS_VERSION (into $GOBIN_DIR)"
  WT=$(mktemp -d)
  trap 'rm -rf "$WT"' EXIT
  (cd "$WT" && go mod init wailscli >/dev/null 2>&1 \
    && go get "github.com/wailsapp/wails/v2@$WAILS_VERSION" "golang.org/x/tools@$WAILS_XTOOLS" \
    && go get "github.com/wailsapp/wails/v2/cmd/wails@$WAILS_VERSION" \
    && go build -o "$GOBIN_DIR/wails" github.com/wailsapp/wails/v2/cmd/wails) >&2
fi

# ---------------------------------------------------------------- Go modules and npm packages
if [ "$check_only" = 0 ]; then
  go mod download
  # frontend/: the window's build tools; e2e/mcp/: the MCP clients and the reference MCP server
  # the tests run (MCP Inspector CLI, the TypeScript SDK, server-everything);
  # agentcore/refcompany/testdata/npm: large real API descriptions the reference Company serves in
  # tests (GitHub's REST API description from @octokit/openapi). None is downloaded by a test or
  # by the product.
  for dir in frontend e2e/mcp agentcore/refcompany/testdata/npm; do
    if [ -f "$dir/package-lock.json" ]; then
      if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
        say "installing npm packages in $dir (npm ci)"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
      fi
    fi
  done
fi
say "ready in $(( $(ts) - start )) s"
