package app

import (
	"bufio"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// startBus runs a private dbus-daemon for the test and returns its address; it skips when
// dbus-daemon is not installed, and fails then under POPPYDESK_REQUIRE_KEYRING=1.
func startBus(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("dbus-daemon")
	if err != nil {
		if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" {
			t.Fatal("POPPYDESK_REQUIRE_KEYRING=1 but dbus-daemon is not installed (apt-get install dbus-daemon)")
		}
		t.Skip("dbus-daemon is not installed (apt-get install dbus-daemon)")
	}
	cmd := exec.Command(path, "--session", "--nofork", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the bus address: %v", err)
	}
	return strings.TrimSpace(line)
}

// notificationServer is a real D-Bus object implementing org.freedesktop.Notifications.Notify.
type notificationServer struct {
	mu  sync.Mutex
	got [][]any
	ch  chan struct{}
}

func (s *notificationServer) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	s.got = append(s.got, []any{app, summary, body})
	s.mu.Unlock()
	s.ch <- struct{}{}
	return 7, nil
}

func TestDesktopNotifier(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		t.Skipf("desktop notifications go over a D-Bus session (freedesktop.org), which %s has not; Poppydesk shows none there", runtime.GOOS)
	}
	addr := startBus(t)
	srvConn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer srvConn.Close()

	t.Run("no notification server: dropped quietly", func(t *testing.T) {
		var logs syncBuf
		n := NewDesktopNotifier(DesktopNotifierConfig{BusAddress: addr, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, nil)
		start := time.Now()
		n.Notify("Approval needed", "x")
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("Notify blocked for %v", d)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), "no notification server answered") {
			if time.Now().After(deadline) {
				t.Fatalf("no debug entry; log: %s", logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		n.Close()
	})

	srv := &notificationServer{ch: make(chan struct{}, 4)}
	if err := srvConn.Export(srv, notifyPath, notifyDest); err != nil {
		t.Fatal(err)
	}
	if reply, err := srvConn.RequestName(notifyDest, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning %s: %v %v", notifyDest, reply, err)
	}

	t.Run("delivered with the body escaped", func(t *testing.T) {
		n := NewDesktopNotifier(DesktopNotifierConfig{BusAddress: addr}, nil)
		defer n.Close()
		n.Notify("Approval needed: <Shop>", `Poppy <b>Outfitters</b> & co`)
		select {
		case <-srv.ch:
		case <-time.After(5 * time.Second):
			t.Fatal("the notification never reached the server")
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		want := []any{"Poppydesk", "Approval needed: <Shop>", "Poppy &lt;b&gt;Outfitters&lt;/b&gt; &amp; co"}
		if len(srv.got) != 1 || srv.got[0][0] != want[0] || srv.got[0][1] != want[1] || srv.got[0][2] != want[2] {
			t.Errorf("got %q, want %q", srv.got, want)
		}
		srv.got = nil
	})

	// The taskbar count and the notifications share one connection, which stays open between
	// them: a count, two notifications and a count all arrive.
	t.Run("counts and notifications, one after the other", func(t *testing.T) {
		if err := srvConn.AddMatchSignal(dbus.WithMatchInterface("com.canonical.Unity.LauncherEntry")); err != nil {
			t.Fatal(err)
		}
		signals := make(chan *dbus.Signal, 8)
		srvConn.Signal(signals)
		defer srvConn.RemoveSignal(signals)
		count := func(want int64) {
			t.Helper()
			select {
			case s := <-signals:
				props, _ := s.Body[1].(map[string]dbus.Variant)
				if s.Name != launcherSignal || s.Body[0] != launcherApp || props["count"].Value() != want || props["count-visible"].Value() != (want > 0) {
					t.Errorf("the taskbar got %s %v; want the count %d", s.Name, s.Body, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the count %d never reached the taskbar", want)
			}
		}
		notified := func(title string) {
			t.Helper()
			select {
			case <-srv.ch:
			case <-time.After(5 * time.Second):
				t.Fatalf("the notification %q never reached the server", title)
			}
		}
		n := NewDesktopNotifier(DesktopNotifierConfig{BusAddress: addr}, func(string) string { return addr })
		defer n.Close()
		n.Count(1)
		count(1)
		n.Notify("Approval needed: Shop", "one")
		notified("one")
		n.Notify("New terms: Shop", "two")
		notified("two")
		n.Count(0)
		count(0)
	})
}

func TestDesktopNotifierWithoutBus(t *testing.T) {
	for _, addr := range []string{"", "disabled:", "autolaunch:"} {
		n := NewDesktopNotifier(DesktopNotifierConfig{}, func(string) string { return addr })
		if n.Enabled() {
			t.Errorf("address %q: enabled", addr)
		}
		n.Notify("t", "b") // must return at once and do nothing
		n.Close()
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
