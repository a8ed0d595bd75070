package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
)

type recorder struct {
	mu     sync.Mutex
	events []string
	data   [][]any
}

func (r *recorder) Emit(event string, data ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event)
	r.data = append(r.data, data)
}

func TestShellSections(t *testing.T) {
	tests := []struct {
		name    string
		counter Counter
		want    map[string]int
	}{
		{name: "no engine: every count is zero", want: map[string]int{}},
		{
			name:    "counts come from the counter; negatives are clamped",
			counter: func(id string) int { return map[string]int{SectionApprovals: 2, SectionInspector: -1}[id] },
			want:    map[string]int{SectionApprovals: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewShell(ShellConfig{Counter: tt.counter}, nil)
			got := s.Sections()
			var ids []string
			for _, sec := range got {
				ids = append(ids, sec.ID)
				if sec.Count != tt.want[sec.ID] {
					t.Errorf("%s count = %d, want %d", sec.ID, sec.Count, tt.want[sec.ID])
				}
				if sec.Title == "" {
					t.Errorf("%s has no title", sec.ID)
				}
			}
			wantIDs := []string{"approvals", "companies", "signin", "conversations", "browser", "inspector", "settings"}
			if !reflect.DeepEqual(ids, wantIDs) {
				t.Errorf("ids = %v, want %v (the frontend's sections.ts uses these)", ids, wantIDs)
			}
		})
	}
}

func TestShellInfoIsHonestAboutTheKeyring(t *testing.T) {
	p := Paths{Data: "/d", Config: "/c", State: "/s"}
	info := NewShell(ShellConfig{Version: "1.2.3", Paths: p}, nil).Info()
	if info.Keyring != KeyringNotConnected || info.Version != "1.2.3" || info.DataDir != "/d" || info.LogFile != "/s/poppydesk.log" {
		t.Fatalf("Info() = %+v", info)
	}
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"name", "version", "protocol", "dataDir", "configDir", "logFile", "keyring", "demo"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON field %q missing (frontend/wailsjs/go/models.ts expects it)", k)
		}
	}
}

func TestStatusLineEmits(t *testing.T) {
	var rec recorder
	var relay Relay
	detach := relay.Attach(&rec)
	status := NewStatusLine(&relay, "")
	shell := NewShell(ShellConfig{}, status)
	status.Set("Signing in to shop.example")
	if got := shell.Status(); got != "Signing in to shop.example" {
		t.Fatalf("Status() = %q", got)
	}
	detach()
	status.Set("after detach")
	if !reflect.DeepEqual(rec.events, []string{EventStatus}) || !reflect.DeepEqual(rec.data[0], []any{"Signing in to shop.example"}) {
		t.Fatalf("events = %v %v", rec.events, rec.data)
	}
}

func TestRelayFansOut(t *testing.T) {
	var a, b recorder
	var r Relay
	r.Emit("dropped") // no target yet
	r.Attach(&a)
	detachB := r.Attach(EmitterFunc(b.Emit)) // a func: detaching must not compare it
	r.Emit("x", 1)
	detachB()
	r.Emit("y")
	if !reflect.DeepEqual(a.events, []string{"x", "y"}) || !reflect.DeepEqual(b.events, []string{"x"}) {
		t.Fatalf("a=%v b=%v", a.events, b.events)
	}
}

func TestFrontendReadyIsLogged(t *testing.T) {
	var buf bytes.Buffer
	NewShell(ShellConfig{Log: slog.New(slog.NewJSONHandler(&buf, nil))}, nil).FrontendReady()
	if !strings.Contains(buf.String(), `"msg":"window frontend ready"`) {
		t.Fatalf("log = %s", buf.String())
	}
}
