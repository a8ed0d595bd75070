//go:build realwindow

// Package realwindow tests the release window (build/bin/poppydesk, WebKitGTK) as a person uses
// it: on a desktop of its own (Xvfb, a D-Bus session bus, the Openbox window manager, a desktop
// notification server and the accessibility bus), driven with real X input events (xdotool), and
// read through the accessibility tree a screen reader reads (AT-SPI 2, over D-Bus). The model's
// side is an MCP client on the app's socket, as `poppydesk mcp` relays one.
//
// The tests need the release binary (`make build`, or POPPYDESK_BIN) and the Debian packages
// xvfb, dbus-daemon, openbox, xdotool, x11-utils, imagemagick and at-spi2-core
// (scripts/bootstrap.sh installs them). They are built only with the tag realwindow and run as
// their own step of scripts/test.sh, after the release build:
//
//	go test -tags realwindow ./e2e/realwindow/
//
// Screenshots go to out/realwindow/ (POPPYDESK_WINDOW_OUT).
package realwindow
