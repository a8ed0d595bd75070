#!/usr/bin/env bash
# with-keyring.sh CMD [ARGS...]
#
# Runs CMD inside a fresh D-Bus session (dbus-run-session) with its own unlocked gnome-keyring
# (Secret Service component only), a throwaway XDG_DATA_HOME and XDG_RUNTIME_DIR, and
# POPPYDESK_REQUIRE_KEYRING=1 exported, so the vault's real-keyring tests FAIL instead of skipping
# when the Secret Service is unreachable. Everything it creates is removed when CMD ends; the
# D-Bus daemon and gnome-keyring exit with the session. Exits with CMD's status.
#
# Example: bash scripts/with-keyring.sh go test ./vault/...
#
# Needs the Debian packages dbus-daemon, gnome-keyring and libsecret-tools (secret-tool, used by
# the tests to cross-check an item). Do not install dbus-x11: without a session bus, programs
# would autolaunch D-Bus daemons that outlive the run (docs/PLATFORM.md).
set -euo pipefail

if [ "$#" -eq 0 ]; then
	echo "usage: $0 CMD [ARGS...]   (for example: $0 go test ./vault/...)" >&2
	exit 2
fi

missing=()
for tool in dbus-run-session gnome-keyring-daemon secret-tool; do
	command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -ne 0 ]; then
	echo "with-keyring.sh: missing ${missing[*]}; install the Debian packages with:" >&2
	echo "    apt-get install -y dbus-daemon gnome-keyring libsecret-tools" >&2
	exit 127
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/poppydesk-keyring.XXXXXX")"
cleanup() { rm -rf -- "$tmp"; }
trap cleanup EXIT
mkdir -m 700 "$tmp/data" "$tmp/run"

export XDG_DATA_HOME="$tmp/data"
export XDG_RUNTIME_DIR="$tmp/run"
export POPPYDESK_REQUIRE_KEYRING=1
# A fresh login keyring needs a non-empty password; this one lives only as long as the session.
password="$(head -c 18 /dev/urandom | base64)"

status=0
dbus-run-session -- bash -c '
	set -e
	printf %s "$1" | gnome-keyring-daemon --unlock --components=secrets >/dev/null || {
		echo "with-keyring.sh: gnome-keyring-daemon --unlock --components=secrets failed" >&2
		exit 1
	}
	shift
	"$@"
' with-keyring "$password" "$@" || status=$?
exit "$status"
