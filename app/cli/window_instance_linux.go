//go:build linux && (desktop || dev)

package cli

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/godbus/dbus/v5"
	"github.com/wailsapp/wails/v2/pkg/options"
)

// handToRunningWindow hands this launch to a Poppydesk window already running in the desktop
// session, over the session bus, as Wails's single-instance lock does (its D-Bus name, object
// and method for singleInstanceID): the running window comes to the front. It reports whether
// one took it. Doing it before the Host is built means a second launch opens no state database,
// keyring or socket of its own.
func handToRunningWindow(getenv func(string) string, args []string) bool {
	addr := getenv("DBUS_SESSION_BUS_ADDRESS")
	if addr == "" || addr == "disabled:" {
		return false
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	id := "wails_app_" + strings.NewReplacer("-", "_", ".", "_").Replace(singleInstanceID)
	name, path := "org."+id+".SingleInstance", dbus.ObjectPath("/org/"+id+"/SingleInstance")
	var owned bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&owned); err != nil || !owned {
		return false
	}
	data := options.SecondInstanceData{Args: args}
	data.WorkingDirectory, _ = os.Getwd()
	msg, err := json.Marshal(data)
	if err != nil {
		return false
	}
	return conn.Object(name, path).Call(name+".SendMessage", 0, string(msg)).Err == nil
}
