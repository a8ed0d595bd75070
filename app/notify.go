package app

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

// Notifier shows a desktop notification. Implementations never block the caller for long and
// never fail loudly: a notification is a courtesy, the Approvals badge and the dialog are the
// record.
type Notifier interface {
	Notify(title, body string)
}

// NotifierFunc adapts a func to [Notifier].
type NotifierFunc func(title, body string)

// Notify calls f.
func (f NotifierFunc) Notify(title, body string) { f(title, body) }

// Desktop notifications over D-Bus: the freedesktop.org Desktop Notifications Specification
// (org.freedesktop.Notifications.Notify on the session bus), spoken with
// github.com/godbus/dbus/v5. The count on the taskbar entry is the launcher entry API that
// docks and taskbars (GNOME's Dash to Dock and Ubuntu Dock, KDE Plasma's task manager) read: a
// com.canonical.Unity.LauncherEntry.Update signal naming the desktop entry.
const (
	notifyDest   = "org.freedesktop.Notifications"
	notifyPath   = dbus.ObjectPath("/org/freedesktop/Notifications")
	notifyMethod = "org.freedesktop.Notifications.Notify"
	// launcherSignal, launcherPath and launcherApp are the launcher entry's signal, the object
	// it comes from, and the desktop entry it names (build/linux/poppydesk.desktop).
	launcherSignal = "com.canonical.Unity.LauncherEntry.Update"
	launcherPath   = dbus.ObjectPath("/org/poppydesk/Poppydesk/LauncherEntry")
	launcherApp    = "application://poppydesk.desktop"
	// notifyTimeout bounds connecting to the bus and each Notify call.
	notifyTimeout = 2 * time.Second
	// notifyQueue is how many notifications may wait; more are dropped (never blocks).
	notifyQueue = 4
)

// DesktopNotifierConfig configures a [DesktopNotifier].
type DesktopNotifierConfig struct {
	// BusAddress is the session bus address; "" reads $DBUS_SESSION_BUS_ADDRESS. With no
	// address (or "disabled:") the notifier does nothing: it never autolaunches a bus (a
	// dbus-launch daemon would outlive Poppydesk, docs/PLATFORM.md).
	BusAddress string
	// AppName is the application name the notification server shows ("Poppydesk").
	AppName string
	// Log receives debug entries when no notification server answers; nil discards.
	Log *slog.Logger
}

// DesktopNotifier sends notifications to the desktop's notification server and the count of
// what waits to the taskbar entry. Notify and Count queue and return at once; one goroutine
// connects (lazily) and sends. Close stops it.
type DesktopNotifier struct {
	cfg   DesktopNotifierConfig
	queue chan [2]string
	count chan int // the latest count only (a newer one replaces one not sent yet)
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// NewDesktopNotifier returns a notifier and starts its sender goroutine.
func NewDesktopNotifier(cfg DesktopNotifierConfig, getenv func(string) string) *DesktopNotifier {
	if cfg.BusAddress == "" && getenv != nil {
		cfg.BusAddress = getenv("DBUS_SESSION_BUS_ADDRESS")
	}
	if cfg.AppName == "" {
		cfg.AppName = "Poppydesk"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	n := &DesktopNotifier{cfg: cfg, queue: make(chan [2]string, notifyQueue), count: make(chan int, 1), done: make(chan struct{})}
	n.wg.Add(1)
	go n.run()
	return n
}

// Enabled reports whether a session bus address is known.
func (n *DesktopNotifier) Enabled() bool {
	a := n.cfg.BusAddress
	return a != "" && a != "disabled:" && a != "autolaunch:"
}

// Notify queues a notification. title is shown as plain text by every server; body may be
// interpreted as markup by servers with the body-markup capability, so it is escaped here.
// It never blocks: when the queue is full or there is no bus, the notification is dropped.
func (n *DesktopNotifier) Notify(title, body string) {
	if !n.Enabled() {
		n.cfg.Log.Debug("desktop notification skipped: no D-Bus session bus", "title", title)
		return
	}
	select {
	case <-n.done:
	case n.queue <- [2]string{title, escapeMarkup(body)}:
	default:
		n.cfg.Log.Debug("desktop notification dropped: too many are waiting", "title", title)
	}
}

// Count shows n on the application's taskbar entry (0 hides the count). It never blocks; a
// count not sent yet is replaced.
func (n *DesktopNotifier) Count(c int) {
	if !n.Enabled() {
		return
	}
	for {
		select {
		case <-n.done:
			return
		case n.count <- c:
			return
		default:
		}
		select {
		case <-n.count: // drop the older count
		default:
		}
	}
}

// Close stops the sender and closes the bus connection.
func (n *DesktopNotifier) Close() {
	n.once.Do(func() { close(n.done) })
	n.wg.Wait()
}

func (n *DesktopNotifier) run() {
	defer n.wg.Done()
	// The bus connection lives until Close: godbus closes a connection when the context it was
	// made with ends, so it is made with one of its own, and only the connecting is bounded by
	// notifyTimeout.
	var conn *dbus.Conn
	var endConn context.CancelFunc = func() {}
	defer func() { endConn() }()
	connect := func() *dbus.Conn {
		if conn != nil && conn.Connected() {
			return conn
		}
		endConn()
		conn = nil
		life, end := context.WithCancel(context.Background())
		type dialed struct {
			c   *dbus.Conn
			err error
		}
		got := make(chan dialed, 1)
		go func() {
			c, err := dbus.Connect(n.cfg.BusAddress, dbus.WithContext(life))
			got <- dialed{c, err}
		}()
		timer := time.NewTimer(notifyTimeout)
		defer timer.Stop()
		select {
		case d := <-got:
			if d.err != nil {
				end()
				n.cfg.Log.Debug("desktop notification not shown: the D-Bus session bus is unreachable", "err", d.err)
				return nil
			}
			conn, endConn = d.c, end
			return conn
		case <-timer.C:
			n.cfg.Log.Debug("desktop notification not shown: the D-Bus session bus did not answer", "within", notifyTimeout)
		case <-n.done:
		}
		end() // a connection made later closes itself
		return nil
	}
	for {
		select {
		case <-n.done:
			return
		case c := <-n.count:
			if conn := connect(); conn != nil {
				err := conn.Emit(launcherPath, launcherSignal, launcherApp,
					map[string]dbus.Variant{"count": dbus.MakeVariant(int64(c)), "count-visible": dbus.MakeVariant(c > 0)})
				if err != nil {
					n.cfg.Log.Debug("the taskbar count was not sent", "err", err)
				}
			}
		case m := <-n.queue:
			conn := connect()
			if conn == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
			go func() {
				select {
				case <-n.done:
					cancel()
				case <-ctx.Done():
				}
			}()
			call := conn.Object(notifyDest, notifyPath).CallWithContext(ctx, notifyMethod, 0,
				n.cfg.AppName, uint32(0), "", m[0], m[1], []string{}, map[string]dbus.Variant{"urgency": dbus.MakeVariant(byte(1))}, int32(-1))
			cancel()
			if call.Err != nil {
				n.cfg.Log.Debug("desktop notification not shown: no notification server answered", "err", call.Err)
			}
		}
	}
}

// escapeMarkup escapes the characters the Desktop Notifications Specification's body markup
// gives meaning to, so a Company's name is shown as text.
func escapeMarkup(s string) string { return markupEscaper.Replace(s) }

var markupEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
