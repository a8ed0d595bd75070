//go:build unix

package endpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// envListen makes the test binary listen on a plain Unix socket at this path (as any program
// could), say "ready", and wait.
const envListen = "POPPYDESK_ENDPOINT_TEST_LISTEN"

func TestMain(m *testing.M) {
	if p := os.Getenv(envListen); p != "" {
		ln, err := net.Listen("unix", p)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		os.Chmod(p, 0o666)
		fmt.Println("ready")
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(0)
			}
			defer c.Close()
		}
	}
	os.Exit(m.Run())
}

const nobody = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		if os.Getenv("POPPYDESK_REQUIRE_ROOT") == "1" {
			t.Fatal("POPPYDESK_REQUIRE_ROOT=1 but the test does not run as root, so it cannot make files of another user")
		}
		t.Skip("needs root to make files of another user (CI runs as root; POPPYDESK_REQUIRE_ROOT=1 makes this a failure)")
	}
}

// shortTemp is a temporary folder with a short path (Unix socket paths are short).
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "pde")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestDefaultDependsOnlyOnUserAndHome: the default endpoint is in the user's private runtime
// folder when there is one, else in /tmp/poppydesk-UID, named after the home folder; no
// environment variable but HOME plays a part, and HOME only through Home.
func TestDefaultDependsOnlyOnUserAndHome(t *testing.T) {
	uid := os.Getuid()
	key := homeKey("/home/ann")
	if key != homeKey("/home/ann/") || key == homeKey("/home/bob") || len(key) != 12 {
		t.Fatalf("home keys: %s %s %s", key, homeKey("/home/ann/"), homeKey("/home/bob"))
	}
	runRoot := shortTemp(t)
	rt := filepath.Join(runRoot, strconv.Itoa(uid))
	tmpWant := filepath.Join("/tmp", "poppydesk-"+strconv.Itoa(uid), "mcp-"+key+".sock")
	rtWant := filepath.Join(rt, "poppydesk", "mcp-"+key+".sock")
	if runtime.GOOS != "linux" {
		rtWant = tmpWant
	}
	cases := []struct {
		name string
		make func()
		want string
	}{
		{"no runtime folder", func() {}, tmpWant},
		{"a private runtime folder", func() { os.Mkdir(rt, 0o700) }, rtWant},
		{"a runtime folder others can read", func() { os.Chmod(rt, 0o755) }, tmpWant},
		{"a symbolic link as runtime folder", func() {
			os.Remove(rt)
			os.Symlink(shortTemp(t), rt)
		}, tmpWant},
	}
	for _, c := range cases {
		c.make()
		if got := defaultIn(runRoot, "/tmp", uid, "/home/ann"); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	// The real default, whatever the environment a client passes on.
	t.Setenv("XDG_RUNTIME_DIR", "/elsewhere")
	got, err := Default("/home/ann")
	if err != nil || !strings.HasSuffix(got, "/mcp-"+key+".sock") || strings.Contains(got, "elsewhere") {
		t.Fatalf("Default: %s %v", got, err)
	}
	// Home: $HOME when absolute, else the user database's.
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ home, want string }{{"/home/ann/", "/home/ann"}, {"", u.HomeDir}, {"relative", u.HomeDir}} {
		if got, err := Home(func(k string) string { return map[string]string{"HOME": c.home}[k] }); err != nil || got != c.want {
			t.Errorf("Home with HOME=%q: %q %v, want %q", c.home, got, err, c.want)
		}
	}
}

// TestListenAndDialChecks: the socket is 0600 in a 0700 folder that Listen locks; Dial tells
// "nothing there" (no socket, a stale one) from "someone else's" (a folder others may write in,
// a folder or socket of another user, a folder that is a symbolic link).
func TestListenAndDialChecks(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(shortTemp(t), "run")
	path := filepath.Join(dir, "mcp.sock")
	if _, err := Dial(ctx, path); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("no folder: %v", err)
	}
	ln, err := Listen(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	fi, _ := os.Stat(path)
	di, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Fatalf("modes: socket %v, folder %v", fi.Mode(), di.Mode())
	}
	c, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := Listen(ctx, path); err == nil || !strings.Contains(err.Error(), "another Poppydesk is already serving") {
		t.Fatalf("a second Listen: %v", err)
	}
	if runtime.GOOS == "linux" {
		// systemd-tmpfiles takes an exclusive lock before it cleans a folder; it cannot.
		f, _ := os.Open(dir)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Errorf("the folder is not locked while listening: %v", err)
		}
		f.Close()
	}
	untrusted := func(what string, want string) {
		t.Helper()
		_, err := Dial(ctx, path)
		var u *UntrustedError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an UntrustedError saying %q", what, err, want)
		}
	}
	os.Chmod(dir, 0o777)
	untrusted("a folder others may write in", "others may write in it")
	os.Chmod(dir, 0o700)

	// A stale socket (its listener gone, the file left) is "not running", and Listen replaces it.
	ln.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Dial(ctx, path); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("a stale socket: %v", err)
	}
	if ln, err = Listen(ctx, path); err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	ln.Close()

	t.Run("other users", func(t *testing.T) {
		needRoot(t)
		ln, err := Listen(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		os.Chown(path, nobody, nobody)
		untrusted("a socket of another user", "belongs to the user with uid 65534")
		os.Chown(path, 0, 0)
		os.Chown(dir, nobody, nobody)
		untrusted("a folder of another user", "belongs to the user with uid 65534")
		ln.Close()
		if _, err := Listen(ctx, filepath.Join(dir, "other.sock")); !isUntrusted(err) {
			t.Errorf("Listen in a folder of another user: %v", err)
		}
		os.Chown(dir, 0, 0)
		link := filepath.Join(filepath.Dir(dir), "link")
		os.Symlink(dir, link)
		if _, err := Listen(ctx, filepath.Join(link, "mcp.sock")); !isUntrusted(err) {
			t.Errorf("Listen in a folder that is a symbolic link: %v", err)
		}
	})

	t.Run("a server of another user", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("the server's user is checked with SO_PEERCRED, which only Linux has")
		}
		needRoot(t)
		// nobody listens in a folder of its own; its socket is then moved into this user's
		// folder and given to this user, so only the kernel's word on the peer is left.
		theirs := filepath.Join(shortTemp(t), "theirs")
		os.Mkdir(theirs, 0o777)
		os.Chmod(theirs, 0o777)
		exe := filepath.Join(theirs, "endpoint.test")
		copyFile(t, os.Args[0], exe)
		os.Chmod(filepath.Dir(theirs), 0o755)
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = []string{envListen + "=" + filepath.Join(theirs, "s.sock")}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
			t.Fatalf("the helper said %q", l)
		}
		if err := os.Rename(filepath.Join(theirs, "s.sock"), path); err != nil {
			t.Fatal(err)
		}
		os.Chown(path, 0, 0)
		untrusted("a socket served by another user", "the other end runs as the user with uid 65534")
	})
}

func isUntrusted(err error) bool {
	var u *UntrustedError
	return errors.As(err, &u)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
}
