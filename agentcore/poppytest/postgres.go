package poppytest

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// StartPostgres runs a throwaway PostgreSQL cluster (Debian's postgresql package) on a Unix
// socket in a temporary folder, stopped when the test ends, and returns a DSN for a new
// database in it. Without PostgreSQL the test is skipped, or fails when
// POPPYDESK_REQUIRE_POSTGRES=1 (scripts/test.sh sets it).
func StartPostgres(t testing.TB) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		// Under Wine the Linux files are visible, but a Windows process cannot start them.
		t.Skip("the throwaway PostgreSQL cluster runs Debian's server programs, which a Windows process cannot start; these tests run on Linux")
	}
	bin := postgresBin()
	if bin == "" {
		if os.Getenv("POPPYDESK_REQUIRE_POSTGRES") == "1" {
			t.Fatal("PostgreSQL is not installed (Debian: apt-get install postgresql; scripts/bootstrap.sh does it) and POPPYDESK_REQUIRE_POSTGRES=1")
		}
		t.Skip("PostgreSQL is not installed; set POPPYDESK_REQUIRE_POSTGRES=1 to make this a failure")
	}
	dir, err := os.MkdirTemp("", "ppd-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	if err := os.Mkdir(sock, 0o755); err != nil {
		t.Fatal(err)
	}
	// initdb and the server refuse to run as root: run them as the postgres user then.
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, PostgreSQL needs the postgres user (the postgresql package makes it): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, p := range []string{dir, sock} {
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(args ...string) {
		t.Helper()
		full := append(append([]string(nil), asUser...), args...)
		out, err := exec.Command(full[0], full[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(full, " "), err, out)
		}
	}
	run(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
	run(filepath.Join(bin, "pg_ctl"), "-D", data, "-l", filepath.Join(dir, "server.log"), "-w", "-t", "60",
		"-o", "-k "+sock+" -c listen_addresses='' -c fsync=off -c max_connections=100", "start")
	t.Cleanup(func() {
		full := append(append([]string(nil), asUser...), filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop")
		if out, err := exec.Command(full[0], full[1:]...).CombinedOutput(); err != nil {
			t.Errorf("stopping PostgreSQL: %v\n%s", err, out)
		}
	})
	return "host=" + sock + " user=postgres dbname=postgres sslmode=disable"
}

func postgresBin() string {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return ""
	}
	return filepath.Dir(matches[len(matches)-1])
}
