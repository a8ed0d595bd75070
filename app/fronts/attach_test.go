package fronts_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
)

// recorder keeps what an emitter was given, each event as its name and its data as JSON.
type recorder struct {
	mu   sync.Mutex
	seen []string
	data [][]any
}

func (r *recorder) Emit(name string, data ...any) {
	b, _ := json.Marshal(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, name+" "+string(b))
	r.data = append(r.data, data)
}

// TestAttachSendsTheWindowsTypes: the window hears the Host's events with their data in the
// window's types (the example agent's run with its lines made visible and its stop in words),
// events without data carry none, and a target attached to the Host's relay directly still gets
// the Host's own values.
func TestAttachSendsTheWindowsTypes(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	var window, host recorder
	detach := fronts.New(f.Host).Attach(&window)
	f.Host.Relay().Attach(&host)

	run := app.AgentRun{Lines: []string{"evil\u202etext"}, Err: errors.New("stopped")}
	f.Host.Relay().Emit(app.EventExampleAgent, run)
	f.Host.Relay().Emit(app.EventSections)
	detach()
	f.Host.Relay().Emit(app.EventSections)

	want := []string{
		app.EventExampleAgent + ` [{"running":false,"lines":["evil⟦U+202E⟧text"],"error":"The example agent stopped: stopped"}]`,
		app.EventSections + " null",
	}
	if len(window.seen) != len(want) || window.seen[0] != want[0] || window.seen[1] != want[1] {
		t.Errorf("the window heard %q, want %q", window.seen, want)
	}
	if got, ok := host.data[0][0].(app.AgentRun); !ok || got.Lines[0] != run.Lines[0] || len(host.seen) != 3 {
		t.Errorf("the relay's own target got %#v (%d events): converting for the window changed the Host's data", host.data[0], len(host.seen))
	}
}
