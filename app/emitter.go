package app

import "sync"

// Emitter sends a named event with data to the window. Under Wails it is runtime.EventsEmit with
// the OnStartup context; under the browser-testable bridge it is a server-sent event. Data must
// be JSON-encodable.
type Emitter interface {
	Emit(event string, data ...any)
}

// EmitterFunc adapts a func to [Emitter].
type EmitterFunc func(event string, data ...any)

// Emit calls f.
func (f EmitterFunc) Emit(event string, data ...any) { f(event, data...) }

// Relay is an [Emitter] whose target is set later: services are built before Wails starts,
// but Wails hands out the context its runtime needs only in OnStartup. Events emitted before a
// target is set are dropped; services keep their state so the window reads it when it loads.
type Relay struct {
	mu      sync.RWMutex
	targets []*relayTarget
}

// relayTarget gives each attachment an identity: an Emitter may be a func, which cannot be
// compared.
type relayTarget struct{ e Emitter }

// Attach adds a target; every later event goes to every attached target. It returns a func that
// detaches it.
func (r *Relay) Attach(e Emitter) (detach func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := &relayTarget{e}
	r.targets = append(r.targets, t)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i, x := range r.targets {
			if x == t {
				r.targets = append(r.targets[:i:i], r.targets[i+1:]...)
				return
			}
		}
	}
}

// Emit forwards the event to the attached targets.
func (r *Relay) Emit(event string, data ...any) {
	r.mu.RLock()
	targets := r.targets
	r.mu.RUnlock()
	for _, t := range targets {
		t.e.Emit(event, data...)
	}
}
