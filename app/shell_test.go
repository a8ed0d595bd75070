package app

import (
	"reflect"
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

// TestStatusLineEmits: the status line announces each change on its emitter.
func TestStatusLineEmits(t *testing.T) {
	var rec recorder
	var relay Relay
	detach := relay.Attach(&rec)
	status := newStatusLine(&relay, "")
	status.Set("Signing in to shop.example")
	if got := status.Text(); got != "Signing in to shop.example" {
		t.Fatalf("Text() = %q", got)
	}
	detach()
	status.Set("after detach")
	if !reflect.DeepEqual(rec.events, []string{EventStatus}) || !reflect.DeepEqual(rec.data[0], []any{"Signing in to shop.example"}) {
		t.Fatalf("events = %v %v", rec.events, rec.data)
	}
}
