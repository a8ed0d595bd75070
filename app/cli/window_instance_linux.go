//go:build linux && (desktop || dev)

package cli

import (
	"encoding/json"
	"os"
	"strings"
	"time"

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
	name, path := instanceName()
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

// waitInstanceFree waits, at most d, until no process owns the single-instance lock's D-Bus name
// (the previous window's, released when its process ended or exec'd this one), so that Wails's
// lock in this process does not hand this start to a window that is gone.
func waitInstanceFree(getenv func(string) string, d time.Duration) {
	addr := getenv("DBUS_SESSION_BUS_ADDRESS")
	if addr == "" || addr == "disabled:" {
		return
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		return
	}
	defer conn.Close()
	name, _ := instanceName()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		var owned bool
		if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&owned); err != nil || !owned {
			return
		}
	}
}

// instanceName is the D-Bus name and object of Wails's single-instance lock for singleInstanceID.
func instanceName() (string, dbus.ObjectPath) {
	id := "wails_app_" + strings.NewReplacer("-", "_", ".", "_").Replace(singleInstanceID)
	return "org." + id + ".SingleInstance", dbus.ObjectPath("/org/" + id + "/SingleInstance")
}
