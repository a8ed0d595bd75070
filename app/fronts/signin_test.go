package fronts

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/app"
)

// TestSignInOutcome: every way a sign-in ends is said in plain words, with the state the
// window shows (the end-to-end test in e2e/signin_test.go drives the real flows).
func TestSignInOutcome(t *testing.T) {
	for _, tc := range []struct {
		err   error
		state string
		words string
	}{
		{fmt.Errorf("x: %w", oauth.ErrDeclined), FlowDeclined, "declined at Shop"},
		{oauth.ErrCancelled, FlowCancelled, "You cancelled"},
		{fmt.Errorf("%w: no answer", oauth.ErrTimedOut), FlowExpired, "did not finish in time"},
		{&oauth.Error{Step: "code exchange", Code: "invalid_client", Problem: "the Company did not accept Poppydesk's client assertion (spec 4.1)"}, FlowFailed, "client assertion"},
		{errors.New("boom"), FlowFailed, "existing sign-in, if any, is unchanged"},
		{nil, FlowFailed, "without an answer"},
	} {
		state, msg, _ := outcome("Shop", tc.err)
		if state != tc.state || !strings.Contains(msg, tc.words) {
			t.Errorf("outcome(%v) = %s %q, want %s containing %q", tc.err, state, msg, tc.state, tc.words)
		}
	}
}

// TestZeroServicesAnswer: the zero-value services (the ones BindingTypes gives the Wails binding
// generator) belong to no Host: every method answers without panicking, with an error or an
// empty value, and starts nothing.
func TestZeroServicesAnswer(t *testing.T) {
	errNotConnected := (*app.Host)(nil).Refusal()
	if !errors.Is(errNotConnected, &app.Problem{Kind: app.ProblemNotConnected}) {
		t.Fatalf("a nil Host's refusal = %v", errNotConnected)
	}
	zero := BindingTypes()
	if len(zero) != 9 {
		t.Fatalf("BindingTypes lists %d services, want the 9 bound to the window", len(zero))
	}
	in, st := &Inspector{}, &Settings{}
	if _, err := in.List(InspectorQuery{}); !errors.Is(err, errNotConnected) {
		t.Errorf("Inspector.List: %v", err)
	}
	if _, err := in.ExportHAR([]int64{1}); !errors.Is(err, errNotConnected) {
		t.Errorf("Inspector.ExportHAR: %v", err)
	}
	if _, err := in.SetFault("iss-missing", true); err == nil {
		t.Error("Inspector.SetFault succeeded without a demo")
	}
	if _, err := st.View(); !errors.Is(err, errNotConnected) {
		t.Errorf("Settings.View: %v", err)
	}
	if _, err := st.EnrollOperator("https://operator.example", "t"); !errors.Is(err, errNotConnected) {
		t.Errorf("Settings.EnrollOperator: %v", err)
	}
	if _, err := st.UseOwnIdentity(); !errors.Is(err, errNotConnected) {
		t.Errorf("Settings.UseOwnIdentity: %v", err)
	}
	if _, err := st.SetDeveloper([]string{"shop.localhost"}, ""); !errors.Is(err, errNotConnected) {
		t.Errorf("Settings.SetDeveloper: %v", err)
	}
	s, c := &SignIn{}, &Companies{}
	if _, err := s.StartDirect("https://auth.example", "", []string{"a"}, ""); !errors.Is(err, errNotConnected) {
		t.Errorf("StartDirect: %v", err)
	}
	if _, err := s.StartDevice("https://auth.example", "", []string{"a"}, ""); !errors.Is(err, errNotConnected) {
		t.Errorf("StartDevice: %v", err)
	}
	if _, err := s.Plan("x", "", ""); !errors.Is(err, errNotConnected) {
		t.Errorf("Plan: %v", err)
	}
	if r, err := s.Requests(); err != nil || len(r) != 0 {
		t.Errorf("Requests: %v %v", r, err)
	}
	if f := s.Current(); f.ID != "" {
		t.Errorf("Current: %+v", f)
	}
	if _, err := s.Flow("flow_x"); !errors.Is(err, errNotConnected) {
		t.Errorf("Flow: %v", err)
	}
	if err := s.Cancel("flow_x"); !errors.Is(err, errNotConnected) {
		t.Errorf("Cancel: %v", err)
	}
	if err := s.DismissRequest("r"); err == nil {
		t.Error("DismissRequest succeeded")
	}
	if _, err := c.List("", 0); !errors.Is(err, errNotConnected) {
		t.Errorf("List: %v", err)
	}
	if _, err := c.Discover("shop.example"); !errors.Is(err, errNotConnected) {
		t.Errorf("Discover: %v", err)
	}
	if err := c.SignOut("x", "personal"); !errors.Is(err, errNotConnected) {
		t.Errorf("SignOut: %v", err)
	}
	if err := c.Forget("x"); !errors.Is(err, errNotConnected) {
		t.Errorf("Forget: %v", err)
	}

	a := &Approvals{}
	if st := a.Status(); st.Available || st.Problem != errNotConnected.Error() || st.Demo {
		t.Errorf("Approvals.Status: %+v", st)
	}
	if items, err := a.List(); err != nil || items == nil || len(items) != 0 {
		t.Errorf("Approvals.List: %v %v", items, err)
	}
	if _, err := a.Get("a"); !errors.Is(err, errNotConnected) {
		t.Errorf("Approvals.Get: %v", err)
	}
	if _, err := a.Approve("a", "r", "d"); !errors.Is(err, errNotConnected) {
		t.Errorf("Approve: %v", err)
	}
	if err := a.Decline("a", "r"); !errors.Is(err, errNotConnected) {
		t.Errorf("Decline: %v", err)
	}
	if _, err := a.CheckOutcome("a"); !errors.Is(err, errNotConnected) {
		t.Errorf("CheckOutcome: %v", err)
	}
	if _, err := a.StartDemoExchange("api"); err == nil || !strings.Contains(err.Error(), "demo mode") {
		t.Errorf("StartDemoExchange: %v", err)
	}
	if err := a.RunExampleAgent(); err == nil || !strings.Contains(err.Error(), "demo mode") {
		t.Errorf("RunExampleAgent: %v", err)
	}
	if r := a.ExampleAgent(); r.Running || r.Lines == nil {
		t.Errorf("ExampleAgent: %+v", r)
	}

	sh := &Shell{}
	if info := sh.Info(); info.Keyring != KeyringNotConnected || info.Name != "Poppydesk" {
		t.Errorf("Shell.Info: %+v", info)
	}
	for _, sec := range sh.Sections() {
		if sec.Count != 0 {
			t.Errorf("Shell.Sections: %+v", sec)
		}
	}
	sh.FrontendReady()
	if st := sh.Status(); st != "" {
		t.Errorf("Shell.Status: %q", st)
	}

	cv := &Conversations{}
	if st := cv.Status(); st.Available || st.Problem == "" {
		t.Errorf("Conversations.Status: %+v", st)
	}
	if cs, err := cv.Companies(); err != nil || len(cs) != 0 {
		t.Errorf("Conversations.Companies: %v %v", cs, err)
	}
	if _, err := cv.List("x"); !errors.Is(err, errNotConnected) {
		t.Errorf("Conversations.List: %v", err)
	}
	if _, err := cv.Start("x", "hi"); !errors.Is(err, errNotConnected) {
		t.Errorf("Conversations.Start: %v", err)
	}
	if _, err := cv.AcceptUserRequest("x", "c", "e"); !errors.Is(err, errNotConnected) {
		t.Errorf("Conversations.AcceptUserRequest: %v", err)
	}

	b := &Browser{}
	if st := b.State(); st.Open {
		t.Errorf("Browser.State: %+v", st)
	}
	if err := b.ShowWindow(); !errors.Is(err, errNotConnected) {
		t.Errorf("Browser.ShowWindow: %v", err)
	}
	act := &Activity{}
	if l := act.List(10); l == nil || len(l) != 0 {
		t.Errorf("Activity.List: %v", l)
	}
	if info := act.Info(); info.Listening {
		t.Errorf("Activity.Info: %+v", info)
	}
}

// TestFlowView: a sign-in record becomes what the window shows: the countdown while it waits,
// the granted and missing scopes on success, the outcome's words otherwise, and the device
// prompt with its QR code.
func TestFlowView(t *testing.T) {
	s := &SignIn{} // the record alone: no logo to fetch, no Host to ask
	co := &discovery.Company{Identifier: "https://auth.shop.example", Organization: discovery.Organization{Name: "Shop", Domain: "shop.example"}}
	prompt := &oauth.DevicePrompt{Organization: "Shop", Domain: "shop.example", VerificationURI: "https://auth.shop.example/device", UserCode: "BCDF-GHJK", Interval: 5 * time.Second}
	for _, tc := range []struct {
		name string
		rec  app.SignInFlow
		want func(FlowView) bool
	}{
		{"waiting: the countdown rounds up", app.SignInFlow{Kind: app.SignInDirect, Remaining: 1500 * time.Millisecond, URL: "https://auth.shop.example/oauth/authorize?x"},
			func(v FlowView) bool {
				return v.State == FlowWaiting && v.RemainingSeconds == 2 && v.URL != "" && v.Message == ""
			}},
		{"the browser did not open", app.SignInFlow{Kind: app.SignInDirect, Remaining: time.Minute, OpenErr: errors.New("no browser could be started")},
			func(v FlowView) bool { return v.OpenError == "no browser could be started" }},
		{"succeeded with fewer scopes", app.SignInFlow{Done: true, Result: &oauth.Result{Granted: []string{"orders:read"}, Missing: []string{"orders:write"}}},
			func(v FlowView) bool {
				return v.State == FlowSucceeded && v.RemainingSeconds == 0 && strings.Contains(v.Message, "You signed in to Shop.") &&
					strings.Contains(v.Message, "did not approve every scope") && v.Missing[0] == "orders:write"
			}},
		{"cancelled", app.SignInFlow{Done: true, Err: oauth.ErrCancelled},
			func(v FlowView) bool { return v.State == FlowCancelled && strings.Contains(v.Message, "You cancelled") }},
		{"ended without an answer", app.SignInFlow{Done: true},
			func(v FlowView) bool {
				return v.State == FlowFailed && strings.Contains(v.Message, "without an answer from Shop")
			}},
		{"device: the prompt and its QR code", app.SignInFlow{Kind: app.SignInDevice, Device: prompt, Remaining: time.Minute},
			func(v FlowView) bool {
				return v.Device != nil && v.Device.UserCode == "BCDF-GHJK" && v.Device.IntervalSeconds == 5 &&
					strings.HasPrefix(v.Device.QR, "data:image/png;base64,") && v.RemainingSeconds == 60
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rec.Company = co
			if v := s.view(context.Background(), tc.rec); !tc.want(v) || v.Company.Name != "Shop" {
				t.Errorf("view = %+v", v)
			}
		})
	}
}

func TestQRDataURL(t *testing.T) {
	u, err := qrDataURL("https://auth.shop.localhost:8443/device?user_code=BCDF-GHJK")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(u, "data:image/png;base64,"))
	if err != nil || http.DetectContentType(raw) != "image/png" {
		t.Fatalf("not a PNG data URL: %.60s (%v)", u, err)
	}
	if _, err := qrDataURL(""); err == nil {
		t.Error("an empty link was encoded")
	}
}
