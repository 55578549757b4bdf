package schedq

import (
	"testing"
	"time"
)

// TestEqualPriorityPopsInEntryOrder: items of equal priority that entered
// activeQ at the same instant pop in the order they entered it, and an
// in-place update keeps an item's place among its equals. Both the
// specialised default order (Priority) and a caller's Less are covered.
func TestEqualPriorityPopsInEntryOrder(t *testing.T) {
	orders := map[string]func(*Config[string, job]){
		"Priority": func(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio },
		"Less":     func(*Config[string, job]) {},
	}
	tests := []struct {
		name string
		run  func(h *harness)
		want []string
	}{
		{
			name: "ties after a higher pop",
			run: func(h *harness) {
				h.add(mk("d", 1), mk("a", 1), mk("f", 2))
				if got := h.popName(); got != "f" {
					h.t.Fatalf("popped %q first, want f", got)
				}
			},
			want: []string{"d", "a"},
		},
		{
			name: "in-place update keeps the place",
			run: func(h *harness) {
				h.add(job{name: "c", prio: 2}, mk("b", 1), job{name: "d", prio: 2})
				h.c.Update(job{name: "c", prio: 2}, job{name: "c", prio: 2, label: "new"}, h.now)
				h.check()
			},
			want: []string{"c", "d", "b"},
		},
		{
			name: "many ties",
			run: func(h *harness) {
				for _, n := range []string{"k", "j", "i", "h", "g", "f", "e"} {
					h.add(mk(n, 3))
				}
			},
			want: []string{"k", "j", "i", "h", "g", "f", "e"},
		},
		{
			name: "a priority change moves behind the new equals",
			run: func(h *harness) {
				h.add(mk("x", 1), mk("y", 2), mk("z", 2))
				h.c.Update(mk("x", 1), mk("x", 2), h.now)
				h.check()
			},
			want: []string{"y", "z", "x"},
		},
	}
	for oname, order := range orders {
		for _, tc := range tests {
			t.Run(oname+"/"+tc.name, func(t *testing.T) {
				h := newHarness(t, order)
				tc.run(h)
				h.wantOrder(tc.want...)
			})
		}
	}
}

// TestEntryOrderSurvivesRebuild: the lazy activeQ drops its stale slots in
// a rebuild and numbers the live ones afresh; the order among equals must
// come through it.
func TestEntryOrderSurvivesRebuild(t *testing.T) {
	h := newHarness(t, func(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio })
	var want []string
	for i := range 300 {
		name := string(rune('A'+i/26)) + string(rune('a'+i%26))
		h.add(mk(name, 1))
		want = append(want, name)
	}
	for i, name := range want {
		if i%3 == 0 {
			// A priority change and back leaves a stale slot each time,
			// and enough of them make the heap rebuild.
			h.c.Update(mk(name, 1), mk(name, 5), h.now)
			h.c.Update(mk(name, 5), mk(name, 1), h.now)
		}
	}
	h.check()
	got := h.drain()
	// Items whose priority changed re-entered behind their equals.
	var moved, kept []string
	for i, n := range want {
		if i%3 == 0 {
			moved = append(moved, n)
		} else {
			kept = append(kept, n)
		}
	}
	want = append(kept, moved...)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pop %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// TestTickSchedule: Tick anchors the schedule at its first call, flushes
// backoff every FlushBackoffInterval and parked items every
// FlushUnschedulableInterval from there, and NextDeadline says when it
// next has work.
func TestTickSchedule(t *testing.T) {
	h := newHarness(t, func(c *Config[string, job]) {
		c.FlushBackoffInterval = 2 * time.Second
		c.FlushUnschedulableInterval = time.Minute
		c.MaxInUnschedulable = 90 * time.Second
	})
	if _, ok := h.c.NextDeadline(); ok {
		t.Fatal("a deadline before the first Tick")
	}
	h.c.Tick(h.now)
	if _, ok := h.c.NextDeadline(); ok {
		t.Fatal("a deadline with nothing in backoff or parked")
	}
	h.add(mk("a", 1), mk("b", 2))
	h.attemptFail("b")        // an error: backoff 1s, to the end of its window at t0+2s
	h.attemptFail("a", "Fit") // parked
	next, ok := h.c.NextDeadline()
	if !ok || !next.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("next deadline %v %v, want the backoff flush at +2s", next, ok)
	}
	h.step(1500 * time.Millisecond)
	h.c.Tick(h.now) // not due: nothing moves
	h.want("b", InBackoff)
	h.step(500 * time.Millisecond)
	h.c.Tick(h.now)
	h.want("b", InActive)
	next, _ = h.c.NextDeadline()
	if !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("next deadline %v, want the leftover flush at +1m", next)
	}
	h.now = t0.Add(time.Minute)
	h.c.Tick(h.now)
	h.want("a", InUnschedulable) // parked for 1m, not yet 90s
	h.now = t0.Add(2 * time.Minute)
	h.add(mk("c", 3))
	h.attemptFail("c", "Fit")
	h.now = t0.Add(2*time.Minute + 30*time.Second) // a late Tick
	h.c.Tick(h.now)
	h.want("a", InActive) // parked for 150s: its 1s backoff is long over
	h.want("c", InUnschedulable)
	next, _ = h.c.NextDeadline()
	if want := t0.Add(3 * time.Minute); !next.Equal(want) {
		t.Fatalf("next deadline %v, want %v: the grid from the anchor, not from the late Tick", next, want)
	}
}

// TestCheckInvariantsHook: Config.CheckInvariants runs the checker after
// every operation and hears of each violation.
func TestCheckInvariantsHook(t *testing.T) {
	var errs []error
	h := newHarness(t, func(c *Config[string, job]) { c.CheckInvariants = func(err error) { errs = append(errs, err) } })
	h.add(mk("a", 1))
	a := h.pop()
	h.c.byPlugin["Fit"] = 7 // corrupt a counter behind the queue's back
	if err := h.c.Done(a, h.now); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 1 {
		t.Fatalf("violations %v, want the corrupted counter reported once", errs)
	}
}

// TestDefaultUpdateEvent: without UpdateEvents, an update may have changed
// anything: a gated item has its gates run again, and a parked item goes
// back to be tried after its backoff, with no hint registered for updates.
func TestDefaultUpdateEvent(t *testing.T) {
	h := newHarness(t, func(c *Config[string, job]) {
		c.UpdateEvents = nil
		c.Hints = map[string][]EventHint[job]{"Fit": {{Event: evMachineAdd}}}
	})
	h.add(job{name: "g", prio: 1, gated: true}, mk("a", 2))
	h.want("g", InGated)
	h.c.Update(job{name: "g", prio: 1, gated: true}, job{name: "g", prio: 1, gated: true, label: "x"}, h.now)
	h.want("g", InGated) // still gated
	h.c.Update(job{name: "g", prio: 1, gated: true}, mk("g", 1), h.now)
	h.want("g", InActive)
	h.attemptFail("a", "Fit")
	h.c.Update(mk("a", 2), job{name: "a", prio: 2, label: "x"}, h.now)
	h.want("a", InBackoff)
	if x, _ := h.c.Explain("a", h.now); x.Location != InBackoff {
		t.Fatalf("explain %+v", x)
	}
}

// TestUpdatedPriorityWherever: the default order caches each item's
// priority; an Update wherever the item is, or a Requeue handed a changed
// item, refreshes it, so the item pops at its new priority once back in
// activeQ. "a" (1) and "b" (5) go to the same place, "a" becomes 9.
func TestUpdatedPriorityWherever(t *testing.T) {
	a1, a9, b := mk("a", 1), mk("a", 9), mk("b", 5)
	for _, tc := range []struct {
		place string
		run   func(h *harness)
	}{
		{"error backoff", func(h *harness) {
			h.attemptFail("b")
			h.attemptFail("a")
			h.c.Update(a1, a9, h.now)
		}},
		{"unschedulable backoff", func(h *harness) {
			h.attemptFail("b", "Fit")
			h.attemptFail("a", "Fit")
			h.move(evMachineAdd, 0)
			h.want("a", InBackoff)
			h.c.Update(a1, a9, h.now)
		}},
		{"parked", func(h *harness) {
			h.attemptFail("b", "Fit")
			h.attemptFail("a", "Fit")
			h.c.Update(a1, a9, h.now)
			h.want("a", InUnschedulable)
			h.move(evMachineAdd, 0)
		}},
		{"in flight", func(h *harness) {
			h.attemptFail("b")
			h.popName()
			h.c.Update(a1, a9, h.now)
			h.fail("a")
		}},
		{"requeued as a new item", func(h *harness) {
			h.attemptFail("b")
			a := h.pop()
			if err := h.c.Requeue(req(a9, a.Cycle), Failure{}, h.now); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.place, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio })
			h.add(a1, b)
			tc.run(h)
			h.check()
			h.step(time.Minute)
			h.c.Tick(h.now)
			h.step(time.Minute)
			h.c.Tick(h.now)
			h.wantOrder("a", "b")
		})
	}
}
