package app_test

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
)

// TestCompaniesShowExcludedTasks: the Companies screen lists the tasks a Company chose not to
// offer with its alternative in plain words (spec 9.1, 9.2), the same after a restart, from the
// RFC 9111 cache; a reference to an API poppy.json does not list never reaches the screen.
func TestCompaniesShowExcludedTasks(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultAlternativeUnlistedAPI}})
	e, err := f.Fronts().Companies.Discover(f.Company.Domain)
	if err != nil {
		t.Fatal(err)
	}
	byTask := map[string]fronts.ExcludedTaskEntry{}
	for _, x := range e.ExcludedTasks {
		byTask[x.Task] = x
	}
	if len(e.ExcludedTasks) != 4 || e.ExcludedTasksProblem != "" {
		t.Fatalf("entry = %+v", e)
	}
	closeAcct := byTask["Close an account"].Alternative
	if !strings.Contains(closeAcct, "Accounts are closed by the Shop's support team") || !strings.Contains(closeAcct, "On the web: "+f.Company.Origin()+"/account") {
		t.Fatalf("Close an account: %q", closeAcct)
	}
	if gift := byTask["Pay with a gift card"].Alternative; !strings.Contains(gift, "The Company also points your agent to 3 of its API operations or tools") || strings.Contains(gift, refcompany.OtherHost) {
		t.Fatalf("Pay with a gift card: %q", gift)
	}
	if byTask["Change the delivery address of a shipped order"].Alternative != "" || byTask["Buy a gift card"].Alternative != "" {
		t.Fatalf("tasks without a usable alternative got one: %+v", byTask)
	}
	f.Restart(t)
	before := len(f.Company.RequestsTo("", refcompany.ExcludedTasksPath))
	l, err := f.Fronts().Companies.List("", app.CompaniesPageMax)
	if err != nil || len(l.Companies) != 1 || len(l.Companies[0].ExcludedTasks) != 4 {
		t.Fatalf("List = %+v, %v", l, err)
	}
	if n := len(f.Company.RequestsTo("", refcompany.ExcludedTasksPath)); n != before {
		t.Fatalf("listing after a restart fetched the fresh document again (%d requests, had %d)", n, before)
	}
}

// TestCompaniesExcludedTasksProblem: a Company whose excluded tasks cannot be read still shows,
// with the reason.
func TestCompaniesExcludedTasksProblem(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.Company.EditPoppyJSON(func(doc map[string]any) {
		doc["excluded_tasks"] = map[string]any{"url": f.Company.Origin() + "/missing.json"}
	})
	e, err := f.Fronts().Companies.Discover(f.Company.Domain)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.ExcludedTasks) != 0 || !strings.Contains(e.ExcludedTasksProblem, "HTTP 404") {
		t.Fatalf("entry = %+v", e)
	}
}

// TestCompaniesListDoesNotWaitOnACompany: the Companies screen reads excluded tasks from the
// cache only; a Company whose copy is missing is read in the background, so a server that never
// answers keeps no list waiting, and once that read failed the list says so instead of reading
// again at every redraw.
func TestCompaniesListDoesNotWaitOnACompany(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The first connection (Discover's read) is closed at once; the next ones are held without
	// a word until release is closed.
	held, release := make(chan struct{}, 8), make(chan struct{})
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if n == 0 {
				c.Close()
				continue
			}
			held <- struct{}{}
			go func() { <-release; c.Close() }()
		}
	}()
	u, _ := url.Parse(f.Company.Origin())
	hang := "https://" + u.Hostname() + ":" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/excluded.json"
	f.Company.EditPoppyJSON(func(doc map[string]any) { doc["excluded_tasks"] = map[string]any{"url": hang} })
	e, err := f.Fronts().Companies.Discover(f.Company.Domain)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.ExcludedTasksProblem, "could not read") {
		t.Fatalf("Discover: %+v", e)
	}

	listed := make(chan fronts.CompanyList, 1)
	go func() {
		l, err := f.Fronts().Companies.List("", app.CompaniesPageMax)
		if err != nil {
			t.Error(err)
		}
		listed <- l
	}()
	var l fronts.CompanyList
	sawHeld := false
	select {
	case l = <-listed:
	case <-held:
		sawHeld = true
		select {
		case l = <-listed:
		case <-time.After(5 * time.Second):
			t.Fatal("Companies.List waits on a Company's server that does not answer")
		}
	}
	if len(l.Companies) != 1 || !strings.Contains(l.Companies[0].ExcludedTasksProblem, "is reading") {
		t.Fatalf("List while the read runs: %+v", l)
	}
	if !sawHeld {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("no background read of the excluded tasks")
		}
	}
	close(release)
	deadline := time.Now().Add(15 * time.Second)
	for {
		l, err := f.Fronts().Companies.List("", app.CompaniesPageMax)
		if err != nil {
			t.Fatal(err)
		}
		if p := l.Companies[0].ExcludedTasksProblem; strings.Contains(p, "could not read") {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after the background read failed the list says %q", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
