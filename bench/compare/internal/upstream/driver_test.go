package upstream

import (
	"testing"
	"time"
)

func withDriver(t *testing.T, f func(t *testing.T, d *Driver)) {
	d := New(Options{})
	defer d.Close()
	f(t, d)
}

func want(t *testing.T, d *Driver, name, where string) {
	t.Helper()
	if got := d.Where(name); got != where {
		t.Fatalf("Where(%s) = %q, want %q; snapshot %v", name, got, where, d.Snapshot())
	}
}

// The brief's smoke scenario: pop the highest priority of three, fail it
// unschedulable, then deliver an event its plugin's hint accepts.
func TestSmoke(t *testing.T) {
	withDriver(t, func(t *testing.T, d *Driver) {
		d.Add("low", 1)
		d.Add("high", 100)
		d.Add("mid", 50)
		name, ok := d.Pop()
		if !ok || name != "high" {
			t.Fatalf("Pop = %q,%v, want high", name, ok)
		}
		want(t, d, "high", InFlight)
		if err := d.FailUnschedulable("high", []string{PluginC}); err != nil {
			t.Fatal(err)
		}
		want(t, d, "high", Unschedulable)

		// PluginC is not interested in NodeAdd: nothing moves.
		d.MoveAll(NodeAdd, HintQueueAll)
		want(t, d, "high", Unschedulable)
		// PluginC registered for AssignedPodDelete, but its hint skips.
		d.MoveAll(AssignedPodDelete, HintSkipAll)
		want(t, d, "high", Unschedulable)
		// Now the hint accepts: the pod has UnschedulableCount=1, i.e. 1s of
		// backoff, and the fake clock has not moved, so upstream parks it in
		// backoffQ.
		d.MoveAll(AssignedPodDelete, HintQueueAll)
		want(t, d, "high", Backoff)

		// A flush before the backoff expires leaves it there ...
		d.FlushBackoff()
		want(t, d, "high", Backoff)
		// ... after it, the flush moves it to activeQ, ahead of mid/low.
		d.Step(2 * time.Second)
		d.FlushBackoff()
		want(t, d, "high", Active)
		if got := d.ActiveOrder(); len(got) != 3 || got[0] != "high" {
			t.Fatalf("active order %v", got)
		}
	})
}

func TestHintAfterBackoffGoesActive(t *testing.T) {
	withDriver(t, func(t *testing.T, d *Driver) {
		d.AddLabeled("p", 1, map[string]string{LabelWake: PluginB})
		d.Pop()
		if err := d.FailUnschedulable("p", []string{PluginA, PluginB}); err != nil {
			t.Fatal(err)
		}
		d.Step(5 * time.Second) // backoff (1s) already over
		d.MoveAll(NodeUpdateTaint, HintByLabel)
		want(t, d, "p", Active)
	})
}

func TestEventDuringFlight(t *testing.T) {
	withDriver(t, func(t *testing.T, d *Driver) {
		d.Add("p", 1)
		d.Pop()
		d.MoveAll(NodeAdd, HintQueueAll) // recorded against the in-flight pod
		if err := d.FailUnschedulable("p", []string{PluginA}); err != nil {
			t.Fatal(err)
		}
		want(t, d, "p", Backoff)
	})
}

func TestErrorBackoffNotPoppable(t *testing.T) {
	withDriver(t, func(t *testing.T, d *Driver) {
		d.Add("p", 1)
		d.Pop()
		if err := d.FailError("p"); err != nil {
			t.Fatal(err)
		}
		want(t, d, "p", Backoff)
		if _, ok := d.Pop(); ok {
			t.Fatal("error-backoff pod should not be poppable")
		}
		// Backoff is 1s, but upstream aligns expiry to whole-second windows and
		// a pod whose expiry falls in the current window is still backing off.
		d.Step(time.Second + time.Millisecond)
		d.FlushBackoff()
		want(t, d, "p", Backoff)
		d.Step(time.Second)
		d.FlushBackoff()
		want(t, d, "p", Active)
		if n, ok := d.Pop(); !ok || n != "p" {
			t.Fatalf("Pop = %q,%v", n, ok)
		}
		d.Done("p")
		want(t, d, "p", Absent)
	})
}

func TestGate(t *testing.T) {
	withDriver(t, func(t *testing.T, d *Driver) {
		d.AddLabeled("g", 5, map[string]string{LabelGated: "yes"})
		want(t, d, "g", Gated)
		if _, ok := d.Pop(); ok {
			t.Fatal("gated pod popped")
		}
		d.MoveAll(NodeAdd, HintQueueAll)
		want(t, d, "g", Gated)
		d.Update("g", 5, nil) // drop the gate label
		want(t, d, "g", Active)
	})
}

func TestFlushUnschedulableLeftover(t *testing.T) {
	withDriver(t, func(t *testing.T, d *Driver) {
		d.Add("p", 1)
		d.Pop()
		if err := d.FailUnschedulable("p", []string{PluginA}); err != nil {
			t.Fatal(err)
		}
		d.FlushUnschedulable()
		want(t, d, "p", Unschedulable)
		d.Step(5*time.Minute + time.Second)
		d.FlushUnschedulable()
		want(t, d, "p", Active) // backoff long over, so straight to activeQ
	})
}

func TestActivateAndDelete(t *testing.T) {
	withDriver(t, func(t *testing.T, d *Driver) {
		d.Add("a", 1)
		d.Add("b", 2)
		d.Pop() // b
		if err := d.FailUnschedulable("b", []string{PluginA}); err != nil {
			t.Fatal(err)
		}
		d.Activate("b")
		want(t, d, "b", Active)
		d.Delete("a")
		want(t, d, "a", Absent)
		if n, _ := d.Pop(); n != "b" {
			t.Fatalf("popped %q", n)
		}
		if _, ok := d.Pop(); ok {
			t.Fatal("queue should be empty")
		}
	})
}
