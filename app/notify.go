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
// github.com/godbus/dbus/v5.
const (
	notifyDest   = "org.freedesktop.Notifications"
	notifyPath   = dbus.ObjectPath("/org/freedesktop/Notifications")
	notifyMethod = "org.freedesktop.Notifications.Notify"
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

// DesktopNotifier sends notifications to the desktop's notification server. Notify queues the
// notification and returns at once; one goroutine connects (lazily) and sends. Close stops it.
type DesktopNotifier struct {
	cfg   DesktopNotifierConfig
	queue chan [2]string
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
	n := &DesktopNotifier{cfg: cfg, queue: make(chan [2]string, notifyQueue), done: make(chan struct{})}
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

// Close stops the sender and closes the bus connection.
func (n *DesktopNotifier) Close() {
	n.once.Do(func() { close(n.done) })
	n.wg.Wait()
}

func (n *DesktopNotifier) run() {
	defer n.wg.Done()
	var conn *dbus.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		select {
		case <-n.done:
			return
		case m := <-n.queue:
			ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
			go func() {
				select {
				case <-n.done:
					cancel()
				case <-ctx.Done():
				}
			}()
			if conn == nil {
				c, err := dbus.Connect(n.cfg.BusAddress, dbus.WithContext(ctx))
				if err != nil {
					cancel()
					n.cfg.Log.Debug("desktop notification not shown: the D-Bus session bus is unreachable", "err", err)
					continue
				}
				conn = c
			}
			call := conn.Object(notifyDest, notifyPath).CallWithContext(ctx, notifyMethod, 0,
				n.cfg.AppName, uint32(0), "", m[0], m[1], []string{}, map[string]dbus.Variant{"urgency": dbus.MakeVariant(byte(1))}, int32(-1))
			cancel()
			if call.Err != nil {
				n.cfg.Log.Debug("desktop notification not shown: no notification server answered", "err", call.Err)
				if !conn.Connected() {
					conn.Close()
					conn = nil
				}
			}
		}
	}
}

// escapeMarkup escapes the characters the Desktop Notifications Specification's body markup
// gives meaning to, so a Company's name is shown as text.
func escapeMarkup(s string) string { return markupEscaper.Replace(s) }

var markupEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
