package schedq

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
	"unsafe"
)

func TestPopOrder(t *testing.T) {
	tests := []struct {
		name string
		add  []job
		step time.Duration // between adds
		want []string
	}{
		{"higher priority first", []job{mk("low", 1), mk("high", 10), mk("mid", 5)}, time.Millisecond, []string{"high", "mid", "low"}},
		{"earlier first within a priority", []job{mk("a", 1), mk("b", 1), mk("c", 1)}, time.Millisecond, []string{"a", "b", "c"}},
		{"re-add replaces and refreshes timestamp", []job{mk("a", 1), mk("b", 1), mk("a", 1)}, time.Millisecond, []string{"b", "a"}},
		{"re-add with new priority", []job{mk("a", 1), mk("b", 2), mk("a", 3)}, time.Millisecond, []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for _, p := range tc.add {
				h.add(p)
				h.step(tc.step)
			}
			h.wantOrder(tc.want...)
		})
	}
}

func TestPopBookkeeping(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1))
	h.step(time.Second)
	info := h.pop()
	if info.Attempts != 1 || info.Cycle != 1 || !info.InitialAttemptTimestamp.Equal(t0) || !info.Timestamp.Equal(t0) {
		t.Fatalf("after first pop: %+v", info)
	}
	h.want("a", InFlight)
	h.fail("a", "Fit")
	h.move(evMachineAdd, nil)
	h.step(10 * time.Second)
	h.c.flushBackoff(h.now)
	info = h.pop()
	if info.Attempts != 2 || info.Cycle != 2 || !info.InitialAttemptTimestamp.Equal(t0) || info.UnschedulableCount != 1 {
		t.Fatalf("after second pop: %+v", info)
	}
	if h.c.cycle != 2 {
		t.Fatalf("cycle %d", h.c.cycle)
	}
}

func TestDoneErrors(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1))
	info := h.pop()
	if err := h.c.Done(att("a", info.Cycle+1), h.now); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("Done with another cycle: %v, want ErrNotInFlight", err)
	}
	h.want("a", InFlight)
	if err := h.c.Done(att("a", info.Cycle), h.now); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Done(att("a", info.Cycle), h.now); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("second Done: %v, want ErrNotInFlight", err)
	}
	if err := h.c.Done(att("never", 1), h.now); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("Done of unknown key: %v", err)
	}
	h.check()
}

func TestUpdate(t *testing.T) {
	t.Run("to another key adds it and leaves the old one", func(t *testing.T) {
		h := newHarness(t)
		h.add(mk("a", 1))
		h.c.Update(mk("a", 1), mk("b", 2), h.now)
		h.check()
		h.want("a", InActive)
		h.want("b", InActive)
		if h.info("a").Item.prio != 1 {
			t.Fatal("the old key's item changed")
		}
	})
	t.Run("in activeQ reorders in place", func(t *testing.T) {
		h := newHarness(t)
		h.add(mk("a", 1), mk("b", 2))
		h.c.Update(mk("a", 1), mk("a", 3), h.now)
		h.check()
		if h.info("a").Timestamp != t0 {
			t.Fatal("update changed the timestamp")
		}
		h.wantOrder("a", "b")
	})
	t.Run("in backoffQ stays there, updated", func(t *testing.T) {
		h := newHarness(t)
		h.add(mk("a", 1))
		h.attemptFail("a") // error: backoff
		h.want("a", InBackoff)
		h.c.Update(mk("a", 1), job{name: "a", prio: 1, label: "x"}, h.now)
		h.check()
		h.want("a", InBackoff)
		if h.info("a").Item.label != "x" {
			t.Fatal("item not updated")
		}
	})
	t.Run("parked moves only when a hint accepts", func(t *testing.T) {
		h := newHarness(t)
		h.add(job{name: "a", label: "x"})
		h.attemptFail("a", "Affinity")
		h.want("a", InUnschedulable)
		h.c.Update(job{name: "a", label: "x"}, job{name: "a", label: "x", prio: 5}, h.now) // no event
		h.check()
		h.want("a", InUnschedulable)
		h.c.Update(job{name: "a", label: "x"}, job{name: "a", label: "y"}, h.now) // label: Affinity registered, nil hint
		h.check()
		h.want("a", InBackoff)
		if h.info("a").Item.label != "y" {
			t.Fatal("item not updated")
		}
	})
	t.Run("parked, plugin not interested: stays", func(t *testing.T) {
		h := newHarness(t)
		h.add(job{name: "a", label: "x"})
		h.attemptFail("a", "Fit")
		h.c.Update(job{name: "a", label: "x"}, job{name: "a", label: "y"}, h.now)
		h.check()
		h.want("a", InUnschedulable)
	})
	t.Run("hints off: any classified update moves a parked item", func(t *testing.T) {
		h := newHarness(t, func(c *Config[string, job]) { c.DisableQueueingHints = true })
		h.add(job{name: "a", label: "x"})
		h.attemptFail("a", "Fit")
		h.c.Update(job{name: "a", label: "x"}, job{name: "a", label: "y"}, h.now)
		h.check()
		h.want("a", InBackoff)
	})
	t.Run("unknown is added", func(t *testing.T) {
		h := newHarness(t)
		h.c.Update(mk("a", 1), mk("a", 1), h.now)
		h.check()
		h.want("a", InActive)
	})
	t.Run("in flight changes no queue and is replayed on requeue", func(t *testing.T) {
		h := newHarness(t)
		h.add(job{name: "a", label: "x"})
		info := h.pop()
		h.c.Update(job{name: "a", label: "x"}, job{name: "a", label: "y"}, h.now)
		h.check()
		h.want("a", InFlight)
		if c := h.c.Counts(); c != (Counts{InFlight: 1}) {
			t.Fatalf("update of an in-flight item queued something: %+v", c)
		}
		// The attempt fails on Affinity, which registered for label updates:
		// the update seen in flight sends it to backoff, not to parking.
		if err := h.c.Requeue(req(info.Item, info.Cycle), Failure{RejectedBy: []string{"Affinity"}}, h.now); err != nil {
			t.Fatal(err)
		}
		h.check()
		h.want("a", InBackoff)
		if got := h.info("a").Item.label; got != "y" {
			t.Fatalf("requeued the stale item: label %q", got)
		}
	})
	t.Run("in flight, update another plugin ignores: parked", func(t *testing.T) {
		h := newHarness(t)
		h.add(job{name: "a", label: "x"})
		h.pop()
		h.c.Update(job{name: "a", label: "x"}, job{name: "a", label: "y"}, h.now)
		h.fail("a", "Fit")
		h.want("a", InUnschedulable)
	})
	t.Run("gated item whose update removes the gate goes to activeQ", func(t *testing.T) {
		h := newHarness(t)
		h.add(job{name: "g", gated: true})
		h.want("g", InGated)
		if g := h.info("g").GatedBy; g != "Gate" {
			t.Fatalf("gating plugin %q", g)
		}
		h.noPop()
		h.c.Update(job{name: "g", gated: true}, job{name: "g"}, h.now)
		h.check()
		h.want("g", InActive)
		if h.info("g").GatedBy != "" {
			t.Fatal("gate still recorded")
		}
		h.wantOrder("g")
	})
	t.Run("gated item, other update: stays gated", func(t *testing.T) {
		h := newHarness(t)
		h.add(job{name: "g", gated: true})
		h.c.Update(job{name: "g", gated: true}, job{name: "g", gated: true, label: "z"}, h.now)
		h.check()
		h.want("g", InGated)
	})
}

func TestDelete(t *testing.T) {
	setups := []struct {
		name  string
		setup func(h *harness)
		loc   Location
	}{
		{"active", func(h *harness) {}, InActive},
		{"backoff", func(h *harness) { h.attemptFail("a") }, InBackoff},
		{"unschedulable", func(h *harness) { h.attemptFail("a", "Fit") }, InUnschedulable},
	}
	for _, tc := range setups {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.add(mk("a", 1))
			tc.setup(h)
			h.want("a", tc.loc)
			if err := h.c.Delete("a", h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("a", absent)
			if err := h.c.Delete("a", h.now); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second delete: %v", err)
			}
		})
	}
	t.Run("gated", func(t *testing.T) {
		h := newHarness(t)
		h.add(job{name: "g", gated: true})
		if err := h.c.Delete("g", h.now); err != nil {
			t.Fatal(err)
		}
		h.check()
		if c := h.c.Counts(); c != (Counts{}) {
			t.Fatalf("counts %+v", c)
		}
	})
	inFlight := []struct {
		name    string
		readd   bool // the key is added again during the attempt, before the Delete
		failure Failure
	}{
		{"in flight, rejected: the failed attempt is dropped", false, Failure{RejectedBy: []string{"Fit"}}},
		{"in flight, error: the failed attempt is dropped", false, Failure{}},
		{"re-added during the attempt, rejected: the failed attempt is dropped", true, Failure{RejectedBy: []string{"Fit"}}},
		{"re-added during the attempt, error: the failed attempt is dropped", true, Failure{}},
	}
	for _, tc := range inFlight {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.add(mk("a", 1))
			info := h.pop()
			if tc.readd {
				h.add(mk("a", 1))
			}
			if err := h.c.Delete("a", h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			if err := h.c.Requeue(req(info.Item, info.Cycle), tc.failure, h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("a", absent)
			if c := h.c.Counts(); c != (Counts{}) {
				t.Fatalf("counts %+v, want empty", c)
			}
		})
	}
}

func TestReaddDuringAttempt(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1))
	info := h.pop()
	h.add(mk("a", 7)) // deleted and recreated while in flight
	h.want("a", InActive)
	err := h.c.Requeue(req(info.Item, info.Cycle), Failure{RejectedBy: []string{"Fit"}}, h.now)
	if !errors.Is(err, ErrAlreadyQueued) {
		t.Fatalf("err %v, want ErrAlreadyQueued", err)
	}
	h.check()
	if got := h.info("a").Item.prio; got != 7 {
		t.Fatalf("queued copy has prio %d, want the new one", got)
	}
	if c := h.c.Counts(); c.InFlight != 0 {
		t.Fatalf("attempt still in flight: %+v", c)
	}
	// A pop of the new copy while the old attempt is in flight supersedes it.
	h2 := newHarness(t)
	h2.add(mk("a", 1))
	old := h2.pop()
	h2.add(mk("a", 2))
	newer := h2.pop()
	if c := h2.c.Counts(); c.InFlight != 1 {
		t.Fatalf("in flight %d, want 1", c.InFlight)
	}
	// The old attempt's late requeue is refused: the newer copy is the item
	// now, and it is in flight.
	if err := h2.c.Requeue(req(old.Item, old.Cycle), Failure{}, h2.now); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("stale requeue: %v, want ErrNotInFlight", err)
	}
	h2.check()
	if _, loc, _ := h2.c.Get("a"); loc != InFlight {
		t.Fatalf("a is %v after the stale requeue, want still in flight", loc)
	}
	// So is its late Done: it must not end the newer attempt.
	if err := h2.c.Done(att("a", old.Cycle), h2.now); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("stale Done: %v, want ErrNotInFlight", err)
	}
	h2.check()
	if _, loc, _ := h2.c.Get("a"); loc != InFlight {
		t.Fatalf("a is %v after the stale Done, want still in flight", loc)
	}
	if err := h2.c.Done(att("a", newer.Cycle), h2.now); err != nil {
		t.Fatal(err)
	}
	if newer.Cycle == old.Cycle {
		t.Fatal("two pops share a cycle")
	}
	// A requeue of an item this queue never popped (cycle 0) is refused;
	// Park queues it as failed, once.
	if err := h2.c.Requeue(req(mk("b", 1), 0), Failure{}, h2.now); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("requeue of cycle 0: %v, want ErrNotInFlight", err)
	}
	h2.want("b", absent)
	if err := h2.c.Park(mk("b", 1), Failure{}, h2.now); err != nil {
		t.Fatal(err)
	}
	h2.want("b", InBackoff)
	if err := h2.c.Park(mk("b", 1), Failure{}, h2.now); !errors.Is(err, ErrAlreadyQueued) {
		t.Fatalf("second park: %v, want ErrAlreadyQueued", err)
	}
}

func TestRaceRule(t *testing.T) {
	// The seeds' example: a move request during an item's attempt sends the
	// failed item to backoff rather than to the parking area, since the
	// event may have made it schedulable.
	tests := []struct {
		name    string
		hintsOn bool
		event   *Event
		obj     any
		failure Failure
		want    Location
	}{
		{"legacy: no move request parks", false, nil, nil, Failure{RejectedBy: []string{"Fit"}}, InUnschedulable},
		{"legacy: move request sends to backoff", false, &evMachineAdd, nil, Failure{RejectedBy: []string{"Fit"}}, InBackoff},
		{"legacy: move request of any registered kind counts", false, &evVolumeAdd, nil, Failure{RejectedBy: []string{"Fit"}}, InBackoff},
		{"legacy: unregistered event is no move request", false, &evService, nil, Failure{RejectedBy: []string{"Fit"}}, InUnschedulable},
		{"hints: no event parks", true, nil, nil, Failure{RejectedBy: []string{"Fit"}}, InUnschedulable},
		{"hints: accepted event sends to backoff", true, &evMachineAdd, 2, Failure{RejectedBy: []string{"Fit"}}, InBackoff},
		{"hints: skipped event parks", true, &evMachineAdd, 3, Failure{RejectedBy: []string{"Fit"}}, InUnschedulable},
		{"hints: event for another plugin parks", true, &evVolumeAdd, nil, Failure{RejectedBy: []string{"Fit"}}, InUnschedulable},
		{"hints: pending plugin's event queues at once", true, &evVolumeAdd, nil, Failure{WaitingOn: []string{"Volume"}}, InActive},
		{"hints: error goes to backoff", true, nil, nil, Failure{}, InBackoff},
		{"legacy: error goes to backoff", false, nil, nil, Failure{}, InBackoff},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string, job]) { c.DisableQueueingHints = !tc.hintsOn })
			h.add(mk("a", 1))
			h.pop()
			if tc.event != nil {
				h.move(*tc.event, tc.obj)
			}
			h.failWith("a", tc.failure)
			h.want("a", tc.want)
		})
	}
}

func TestMoveRequestBeforePopDoesNotCount(t *testing.T) {
	for _, hints := range []bool{true, false} {
		h := newHarness(t, func(c *Config[string, job]) { c.DisableQueueingHints = !hints })
		h.add(mk("a", 1))
		h.move(evMachineAdd, nil)
		h.pop()
		h.fail("a", "Fit")
		h.want("a", InUnschedulable)
	}
}

func TestBackoffSequence(t *testing.T) {
	for _, kind := range []string{"error", "unschedulable"} {
		t.Run(kind, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string, job]) { c.DisablePopFromBackoff = true })
			h.add(mk("a", 1))
			var got []time.Duration
			for range 7 {
				h.pop()
				if kind == "error" {
					h.fail("a")
				} else {
					h.fail("a", "Fit")
					h.move(evMachineAdd, nil) // into backoffQ
				}
				info := h.info("a")
				got = append(got, info.BackoffExpiry.Sub(info.Timestamp))
				h.step(info.BackoffExpiry.Sub(h.now))
				h.c.flushBackoff(h.now)
				h.want("a", InBackoff) // backoff ends strictly after its expiry
				h.step(time.Nanosecond)
				h.c.flushBackoff(h.now)
				h.check()
				h.want("a", InActive)
			}
			want := []time.Duration{1, 2, 4, 8, 10, 10, 10}
			for i := range want {
				if got[i] != want[i]*time.Second {
					t.Fatalf("backoffs %v, want %v s", got, want)
				}
			}
		})
	}
}

// TestBackoffStaysUntilExpiry checks that, without pop-from-backoff, an
// item backs off until strictly after its expiry, as upstream: a flush or a
// move request at the expiry itself leaves it in backoffQ.
func TestBackoffStaysUntilExpiry(t *testing.T) {
	cases := []struct {
		name string
		fail func(h *harness)
	}{
		{"error", func(h *harness) { h.attemptFail("a") }},
		{"rejected", func(h *harness) {
			h.attemptFail("a", "Fit")
			h.move(evMachineAdd, nil)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name+", backoff flush", func(t *testing.T) {
			h := newHarness(t, func(c *Config[string, job]) { c.DisablePopFromBackoff = true })
			h.add(mk("a", 1))
			tc.fail(h)
			h.want("a", InBackoff)
			for _, d := range []time.Duration{999 * time.Millisecond, time.Millisecond} { // to the expiry
				h.step(d)
				h.c.flushBackoff(h.now)
				h.want("a", InBackoff)
				h.noPop()
			}
			h.step(time.Nanosecond)
			h.c.flushBackoff(h.now)
			h.check()
			h.want("a", InActive)
		})
	}
	for _, tc := range []struct {
		name  string
		after time.Duration // from the failure to the move request
		want  Location
	}{
		{"move request at the expiry: backoff", time.Second, InBackoff},
		{"move request just after the expiry: active", time.Second + time.Nanosecond, InActive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string, job]) { c.DisablePopFromBackoff = true })
			h.add(mk("a", 1))
			h.attemptFail("a", "Fit")
			h.want("a", InUnschedulable)
			h.step(tc.after)
			h.move(evMachineAdd, nil)
			h.want("a", tc.want)
		})
	}
}

func TestErrorResetByUnschedulable(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1))
	h.attemptFail("a")
	h.step(time.Minute)
	h.c.flushBackoff(h.now)
	h.attemptFail("a")
	if i := h.info("a"); i.ConsecutiveErrors != 2 || i.BackoffExpiry.Sub(i.Timestamp) != 2*time.Second {
		t.Fatalf("after two errors: %+v", i)
	}
	h.step(time.Minute)
	h.c.flushBackoff(h.now)
	h.attemptFail("a", "Fit")
	if i := h.info("a"); i.ConsecutiveErrors != 0 || i.UnschedulableCount != 1 {
		t.Fatalf("after an unschedulable failure: %+v", i)
	}
	// Errors do not lengthen the unschedulable backoff (upstream #128744).
	h.move(evMachineAdd, nil)
	if i := h.info("a"); i.BackoffExpiry.Sub(i.Timestamp) != time.Second {
		t.Fatalf("backoff %v, want 1s", i.BackoffExpiry.Sub(i.Timestamp))
	}
}

func TestDisableBackoff(t *testing.T) {
	// Upstream #131661: a max backoff of 0 still held jobs ~1s through window
	// alignment. Here no backoff means none.
	for _, pop := range []bool{true, false} {
		h := newHarness(t, func(c *Config[string, job]) {
			c.DisableBackoff = true
			c.DisablePopFromBackoff = !pop
		})
		h.add(mk("a", 1))
		h.step(300 * time.Millisecond)
		h.attemptFail("a")
		h.want("a", InActive)
		h.attemptFail("a", "Fit")
		h.move(evMachineAdd, nil)
		h.want("a", InActive)
	}
}

func TestPopFromBackoff(t *testing.T) {
	t.Run("takes the unschedulable heap when activeQ is empty", func(t *testing.T) {
		h := newHarness(t)
		h.add(mk("a", 1))
		h.attemptFail("a", "Fit")
		h.move(evMachineAdd, nil)
		h.want("a", InBackoff)
		info := h.pop()
		if info.Item.name != "a" || info.Attempts != 2 {
			t.Fatalf("popped %+v", info)
		}
	})
	t.Run("never the error heap", func(t *testing.T) {
		h := newHarness(t)
		h.add(mk("a", 1))
		h.attemptFail("a")
		h.want("a", InBackoff)
		h.noPop()
		if h.c.Poppable() {
			t.Fatal("Poppable with only an error backoff")
		}
	})
	t.Run("activeQ first", func(t *testing.T) {
		h := newHarness(t)
		h.add(mk("a", 100))
		h.attemptFail("a", "Fit")
		h.move(evMachineAdd, nil)
		h.add(mk("b", 1))
		h.wantOrder("b", "a")
	})
	t.Run("off: backoff waits", func(t *testing.T) {
		h := newHarness(t, func(c *Config[string, job]) { c.DisablePopFromBackoff = true })
		h.add(mk("a", 1))
		h.attemptFail("a", "Fit")
		h.move(evMachineAdd, nil)
		h.noPop()
	})
	t.Run("1-second windows, priority within a window", func(t *testing.T) {
		h := newHarness(t)
		// Fail each at a different time so that the expiries are:
		// low1 t0+1.1s, high t0+1.6s (same window), low2 t0+2.05s (next).
		h.add(mk("low1", 1), mk("high", 9), mk("low2", 1))
		for range 3 {
			h.pop()
		}
		h.now = t0.Add(600 * time.Millisecond)
		h.fail("high", "Fit")
		h.now = t0.Add(100 * time.Millisecond)
		h.fail("low1", "Fit")
		h.now = t0.Add(1050 * time.Millisecond)
		h.fail("low2", "Fit")
		h.move(evMachineAdd, nil)
		for _, n := range []string{"high", "low1", "low2"} {
			h.want(n, InBackoff)
		}
		// Within window [1s,2s): high before low1 despite its later expiry;
		// low2's window [2s,3s) comes after.
		h.wantOrder("high", "low1", "low2")
	})
	t.Run("plain expiry order when off", func(t *testing.T) {
		h := newHarness(t, func(c *Config[string, job]) { c.DisablePopFromBackoff = true })
		h.add(mk("low1", 1), mk("high", 9))
		h.pop()
		h.pop()
		h.now = t0.Add(600 * time.Millisecond)
		h.fail("high", "Fit")
		h.now = t0.Add(100 * time.Millisecond)
		h.fail("low1", "Fit")
		h.move(evMachineAdd, nil)
		h.now = t0.Add(5 * time.Second)
		h.c.flushBackoff(h.now)
		h.check()
		h.wantOrder("high", "low1") // both in activeQ now: priority decides
	})
	t.Run("window ends together", func(t *testing.T) {
		h := newHarness(t, func(c *Config[string, job]) {})
		h.add(mk("a", 1))
		h.now = t0.Add(200 * time.Millisecond)
		h.attemptFail("a", "Fit")
		h.move(evMachineAdd, nil) // expiry t0+1.2s, window [1s,2s)
		h.now = t0.Add(1500 * time.Millisecond)
		h.c.flushBackoff(h.now)
		h.want("a", InBackoff)
		h.now = t0.Add(2 * time.Second)
		h.c.flushBackoff(h.now)
		h.check()
		h.want("a", InActive)
	})
}

func TestParkedUntilHintAccepts(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1))
	h.attemptFail("a", "Fit")
	h.want("a", InUnschedulable)
	h.move(evMachineAdd, 3) // Fit's hint skips odd objects
	h.want("a", InUnschedulable)
	h.move(evMachineLabel, nil) // Fit did not register for label updates
	h.want("a", InUnschedulable)
	h.move(evService, nil) // nobody registered
	h.want("a", InUnschedulable)
	h.move(evPlacedAdd, "x") // Affinity's event; a was not rejected by Affinity
	h.want("a", InUnschedulable)
	h.step(time.Minute)
	h.move(evMachineTaint, 4) // accepted, backoff over: activeQ
	h.want("a", InActive)
}

func TestParkedPluginNotRegisteredWaitsForFlush(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1))
	h.attemptFail("a", "Quiet")
	for _, ev := range []Event{evMachineAdd, evVolumeAdd, evPlacedAdd, evService} {
		h.move(ev, nil)
	}
	h.want("a", InUnschedulable)
	h.step(defaultMaxInUnschedulable)
	h.c.flushLeftover(h.now)
	h.want("a", InUnschedulable) // not longer than the max yet
	h.step(time.Millisecond)
	h.c.flushLeftover(h.now)
	h.check()
	h.want("a", InActive)
	if !h.info("a").FlushedFromUnschedulable {
		t.Fatal("FlushedFromUnschedulable not set")
	}
}

func TestErrorNeverParks(t *testing.T) {
	for _, hints := range []bool{true, false} {
		h := newHarness(t, func(c *Config[string, job]) { c.DisableQueueingHints = !hints })
		h.add(mk("a", 1))
		for range 5 {
			h.pop()
			h.fail("a")
			h.want("a", InBackoff)
			h.step(time.Minute)
			h.c.flushBackoff(h.now)
			h.check()
		}
	}
}

func TestMoveAllEarlyReturn(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1))
	h.attemptFail("a", "Fit")
	called := false
	h.c.Move(evService, nil, nil, func(*Info[job]) bool { called = true; return true }, h.now)
	if called {
		t.Fatal("match ran for an event no plugin registered for")
	}
	h.c.Move(evMachineAdd, nil, nil, func(*Info[job]) bool { called = true; return false }, h.now)
	if !called {
		t.Fatal("match did not run")
	}
	h.want("a", InUnschedulable) // match said no
}

func TestMove(t *testing.T) {
	h := newHarness(t)
	h.add(job{name: "x", label: "web"}, job{name: "y", label: "db"})
	h.attemptFail("x", "Affinity")
	h.attemptFail("y", "Affinity")
	h.step(time.Minute)
	h.c.Move(evPlacedAdd, nil, "web", func(i *Info[job]) bool { return i.Item.label == "web" }, h.now)
	h.check()
	h.want("x", InActive)
	h.want("y", InUnschedulable)
}

func TestGating(t *testing.T) {
	t.Run("gated items are counted apart", func(t *testing.T) {
		h := newHarness(t)
		h.add(job{name: "g", gated: true}, mk("a", 1))
		h.attemptFail("a", "Fit")
		if c := h.c.Counts(); c.Gated != 1 || c.Unschedulable != 1 {
			t.Fatalf("counts %+v", c)
		}
	})
	t.Run("events the gate did not register for leave it", func(t *testing.T) {
		h := newHarness(t)
		h.add(job{name: "g", gated: true})
		h.move(evMachineAdd, nil)
		h.move(evLabel, nil)
		h.want("g", InGated)
	})
	t.Run("gate checked again when entering backoff with pop-from-backoff", func(t *testing.T) {
		h := newHarness(t)
		h.add(mk("a", 1))
		info := h.pop()
		// The item became gated during its attempt.
		gated := job{name: "a", prio: 1, gated: true}
		h.c.Update(info.Item, gated, h.now)
		h.fail("a") // error: would go to backoff
		h.want("a", InGated)
	})
	t.Run("activate runs the gate", func(t *testing.T) {
		h := newHarness(t)
		h.add(job{name: "g", gated: true})
		h.c.Activate([]string{"g"}, h.now)
		h.check()
		h.want("g", InGated)
	})
	t.Run("leftover flush re-checks a gated item once per max, not every 30s", func(t *testing.T) {
		checks := 0
		h := newHarness(t, func(c *Config[string, job]) {
			c.PreEnqueue = []PreEnqueue[job]{{Name: "Gate", Admit: func(p job) bool { checks++; return !p.gated }}}
		})
		h.add(job{name: "g", gated: true})
		checks = 0
		for range 2 * 10 { // ten minutes of 30s flushes
			h.step(30 * time.Second)
			h.c.flushLeftover(h.now)
			h.check()
		}
		h.want("g", InGated)
		if checks != 1 {
			t.Fatalf("gate checked %d times in 10 minutes, want 1 (at 5m30s, then not before 10m30s)", checks)
		}
	})
}

func TestActivate(t *testing.T) {
	h := newHarness(t)
	h.add(mk("parked", 3), mk("backoff", 2), mk("flight", 1))
	h.attemptFail("parked", "Fit")
	h.attemptFail("backoff")
	info := h.pop()
	h.c.Activate([]string{"parked", "backoff", "flight", "unknown"}, h.now)
	h.check()
	h.want("parked", InActive)
	h.want("backoff", InActive)
	h.want("flight", InFlight)
	// The activation of the in-flight item is replayed when it fails.
	h.step(time.Minute)
	if err := h.c.Requeue(req(info.Item, info.Cycle), Failure{RejectedBy: []string{"Quiet"}}, h.now); err != nil {
		t.Fatal(err)
	}
	h.check()
	if l := h.where("flight"); l == InUnschedulable {
		t.Fatal("activation during the attempt was lost")
	}
}

func TestFlushBackoffBothHeaps(t *testing.T) {
	h := newHarness(t)
	h.add(mk("u", 1), mk("e", 1))
	h.attemptFail("u", "Fit")
	h.attemptFail("e")
	h.move(evMachineAdd, nil)
	h.want("u", InBackoff)
	h.want("e", InBackoff)
	h.step(2 * time.Second)
	h.c.flushBackoff(h.now)
	h.check()
	h.want("u", InActive)
	h.want("e", InActive)
}

func TestReaders(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 1), mk("b", 2), mk("c", 3), job{name: "g", gated: true})
	h.attemptFail("c", "Fit")
	h.attemptFail("b")
	flight := h.pop() // a
	if c := h.c.Counts(); c != (Counts{Backoff: 1, Unschedulable: 1, Gated: 1, InFlight: 1}) {
		t.Fatalf("counts %+v", c)
	}
	var locs []string
	for _, x := range h.c.Dump(h.now).Items {
		locs = append(locs, x.Key+"="+x.Location.String())
	}
	if want := []string{"b=backoff", "c=unschedulable", "g=gated", "a=inflight"}; !slices.Equal(locs, want) {
		t.Fatalf("dump %v, want %v", locs, want)
	}
	if m := h.c.Stats().HeldBy; m["Fit"] != 1 || m["Gate"] != 1 || len(m) != 2 {
		t.Fatalf("held by plugin %v", m)
	}
	h.move(evMachineTaint, 5) // recorded for the in-flight attempt
	if m := h.c.Stats().InFlightEvents; m["MachineTaint"] != 1 || m["ItemPopped"] != 1 {
		t.Fatalf("in-flight events %v", m)
	}
	if err := h.c.Done(flight, h.now); err != nil {
		t.Fatal(err)
	}
	if m := h.c.Stats().InFlightEvents; len(m) != 0 {
		t.Fatalf("in-flight events kept after the last Done: %v", m)
	}
}

func TestConfigValidate(t *testing.T) {
	base := testConfig()
	tests := []struct {
		name  string
		mut   func(*Config[string, job])
		field string
	}{
		{"nil key", func(c *Config[string, job]) { c.Key = nil }, "Key"},
		{"nil less", func(c *Config[string, job]) { c.Less = nil }, "Less"},
		{"both priority and less", func(c *Config[string, job]) { c.Priority = jobPrio }, "Priority and Less"},
		{"negative initial", func(c *Config[string, job]) { c.InitialBackoff = -1 }, "InitialBackoff"},
		{"negative max", func(c *Config[string, job]) { c.MaxBackoff = -time.Second }, "MaxBackoff"},
		{"initial above max", func(c *Config[string, job]) { c.InitialBackoff = time.Minute }, "InitialBackoff"},
		{"negative max in unschedulable", func(c *Config[string, job]) { c.MaxInUnschedulable = -1 }, "MaxInUnschedulable"},
		{"negative flush", func(c *Config[string, job]) { c.FlushBackoffInterval = -1 }, "FlushBackoffInterval"},
		{"empty event", func(c *Config[string, job]) { c.Hints["X"] = []EventHint[job]{{}} }, `Hints["X"][0]`},
		{"nameless gate", func(c *Config[string, job]) { c.PreEnqueue = append(c.PreEnqueue, PreEnqueue[job]{}) }, "PreEnqueue[1]"},
		{"negative leftover flush", func(c *Config[string, job]) { c.FlushUnschedulableInterval = -1 }, "FlushUnschedulableInterval"},
		{"initial above the default max", func(c *Config[string, job]) { c.InitialBackoff = 11 * time.Second }, "MaxBackoff 10s"},
		{"empty plugin name", func(c *Config[string, job]) { c.Hints[""] = []EventHint[job]{{Event: evMachineAdd}} }, "Hints"},
		{"event without kind", func(c *Config[string, job]) { c.Hints["X"] = []EventHint[job]{{Event: Event{Action: actAdd}}} }, `Hints["X"][0].Event.Kind`},
		{"event without action", func(c *Config[string, job]) { c.Hints["X"] = []EventHint[job]{{Event: Event{Kind: "Machine"}}} }, `Hints["X"][0].Event.Action`},
		{"gate without Admit", func(c *Config[string, job]) { c.PreEnqueue = append(c.PreEnqueue, PreEnqueue[job]{Name: "X"}) }, "PreEnqueue[1]"},
		{"duplicate gate", func(c *Config[string, job]) { c.PreEnqueue = append(c.PreEnqueue, c.PreEnqueue[0]) }, `duplicate name "Gate"`},
		{"nil Priority and Less", func(c *Config[string, job]) { c.Less, c.Priority = nil, nil }, "Priority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.Hints = map[string][]EventHint[job]{}
			for k, v := range base.Hints {
				cfg.Hints[k] = v
			}
			tc.mut(&cfg)
			_, err := NewCore(cfg)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err %v, want ErrInvalidConfig", err)
			}
			if got := err.Error(); !contains(got, tc.field) {
				t.Fatalf("error %q does not name %s", got, tc.field)
			}
		})
	}
	cfg, err := base.validate()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.InitialBackoff != time.Second || cfg.MaxBackoff != 10*time.Second || cfg.MaxInUnschedulable != 5*time.Minute ||
		cfg.FlushBackoffInterval != time.Second || cfg.FlushUnschedulableInterval != 30*time.Second {
		t.Fatalf("defaults %+v", cfg)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestEventMatching(t *testing.T) {
	machine := func(a Action) Event { return Event{Kind: "Machine", Action: a} }
	tests := []struct {
		name    string
		reg, ev Event
		want    bool
	}{
		{"same kind and action", machine(actAdd), machine(actAdd), true},
		{"other action", machine(actAdd), machine(actTaint), false},
		{"overlapping actions", machine(actTaint | actRelabel), machine(actTaint), true},
		{"wider sent action", machine(actTaint), machine(actTaint | actRelabel), true},
		{"other kind", machine(actAdd), Event{Kind: "Volume", Action: actAdd}, false},
		{"any kind", Event{Kind: AnyKind, Action: actAdd}, Event{Kind: "Volume", Action: actAdd}, true},
		{"any kind, other action", Event{Kind: AnyKind, Action: actAdd}, Event{Kind: "Volume", Action: actTaint}, false},
		{"wildcard registration", Event{Kind: AnyKind, Action: AnyAction}, Event{Kind: "Volume", Action: actTaint}, true},
	}
	c, err := NewCore(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		if got := c.matches(tc.reg, tc.ev); got != tc.want {
			t.Errorf("%s: %v matches %v = %v, want %v", tc.name, tc.reg, tc.ev, got, tc.want)
		}
	}
	labels := []struct {
		ev   Event
		want string
	}{
		{evMachineAdd, "MachineAdd"},
		{eventTimeout, "UnschedulableTimeout"},
		{Event{Kind: "Machine", Action: actTaint | actRelabel}, "Machine/0x6"},
	}
	for _, tc := range labels {
		if got := c.label(tc.ev); got != tc.want {
			t.Errorf("label %q, want %q", got, tc.want)
		}
	}
}

// TestCustomMatch: Config.Match replaces the default rule, and a wildcard
// registration hears everything whatever Match says.
func TestCustomMatch(t *testing.T) {
	h := newHarness(t, func(c *Config[string, job]) {
		// Only exact action sets match.
		c.Match = func(reg, ev Event) bool { return reg.Kind == ev.Kind && reg.Action == ev.Action }
		c.Hints["All"] = []EventHint[job]{{Event: Event{Kind: AnyKind, Action: AnyAction}}}
	})
	h.add(mk("a", 1), mk("b", 2))
	h.attemptFail("b", "Fit")
	h.attemptFail("a", "All")
	h.move(Event{Kind: "Machine", Action: actAdd | actTaint}, nil)
	h.want("b", InUnschedulable) // Fit registered actAdd and actTaint apart
	h.want("a", InBackoff)
	h.move(evMachineAdd, nil)
	h.want("b", InBackoff)
}

// TestHintErrorQueues: a hint that fails counts as HintQueue, so an error
// in a plugin's hint can only cost an attempt, never strand an item.
func TestHintErrorQueues(t *testing.T) {
	broken := errors.New("hint broke")
	h := newHarness(t, func(c *Config[string, job]) {
		c.Hints["Broken"] = []EventHint[job]{{Event: evService, Fn: func(job, any, any) (Hint, error) { return HintSkip, broken }}}
	})
	h.add(mk("a", 1))
	h.attemptFail("a", "Broken")
	h.want("a", InUnschedulable)
	h.move(evService, nil)
	h.want("a", InBackoff)
	h.step(2 * time.Second)
	h.c.flushBackoff(h.now)
	h.want("a", InActive)
	h.check()
}

// TestPoppableAgreesWithPop: Poppable says true exactly when Pop would
// return something, in each place an item can be, with pop-from-backoff
// on and off.
func TestPoppableAgreesWithPop(t *testing.T) {
	places := []struct {
		name  string
		setup func(h *harness)
		on    bool // poppable with pop-from-backoff on
		off   bool // and off
	}{
		{"empty", func(h *harness) {}, false, false},
		{"active", func(h *harness) { h.add(mk("a", 1)) }, true, true},
		{"gated", func(h *harness) { h.add(job{name: "g", gated: true}) }, false, false},
		{"in flight", func(h *harness) { h.add(mk("a", 1)); h.pop() }, false, false},
		{"parked", func(h *harness) { h.add(mk("a", 1)); h.attemptFail("a", "Fit") }, false, false},
		{"error backoff", func(h *harness) { h.add(mk("a", 1)); h.attemptFail("a") }, false, false},
		{"unschedulable backoff", func(h *harness) {
			h.add(mk("a", 1))
			h.attemptFail("a", "Fit")
			h.move(evMachineAdd, nil)
			h.want("a", InBackoff)
		}, true, false},
	}
	for _, p := range places {
		for _, off := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/popfrombackoff=%v", p.name, !off), func(t *testing.T) {
				h := newHarness(t, func(c *Config[string, job]) { c.DisablePopFromBackoff = off })
				p.setup(h)
				want := p.on
				if off {
					want = p.off
				}
				if got := h.c.Poppable(); got != want {
					t.Fatalf("Poppable() = %v, want %v", got, want)
				}
				if _, ok := h.c.Pop(h.now); ok != want {
					t.Fatalf("Pop returned ok=%v, Poppable said %v", ok, want)
				}
			})
		}
	}
}

// TestEntrySizeClass: an entry keyed by a two-string key (a pod's
// namespace and name) holding a pointer fits the 320-byte size class,
// five whole cache lines (docs/benchmarks.md's memory per item rests on
// it).
func TestEntrySizeClass(t *testing.T) {
	type nsName struct{ ns, name string }
	if n := unsafe.Sizeof(entry[nsName, *int]{}); n > 320 {
		t.Fatalf("entry is %d bytes, want at most 320", n)
	}
}

// TestMoveEpochWraps: the move-request epoch that marks visited entries is
// 32 bits; when it wraps, a parked entry is still visited (its mark from
// parking is not taken for the new epoch's).
func TestMoveEpochWraps(t *testing.T) {
	h := newHarness(t)
	h.add(mk("a", 0))
	h.pop()
	h.fail("a", "Fit")
	h.want("a", InUnschedulable)
	h.c.epoch = math.MaxUint32
	h.move(evMachineAdd, 4)
	h.want("a", InBackoff)
}

// TestRequeueAttemptOfAnotherCore passes one Core's attempt to another
// Core. The attempt is only a key and a cycle to the other Core, as a
// handle built by hand: it must neither touch the Core that popped it nor
// corrupt the one it is passed to.
func TestRequeueAttemptOfAnotherCore(t *testing.T) {
	tests := []struct {
		name    string
		other   []job // added to the other Core, whose first is popped
		want    Location
		wantErr error
	}{
		{"same key and cycle in flight there", []job{mk("a", 1)}, InUnschedulable, nil},
		{"another key in flight there", []job{mk("b", 1)}, absent, ErrNotInFlight},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			popper, other := newHarness(t), newHarness(t)
			popper.add(mk("a", 1))
			a := popper.pop()
			other.add(tc.other...)
			other.pop()
			err := other.c.Requeue(a, Failure{RejectedBy: []string{"Fit"}}, other.now)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Requeue: %v, want %v", err, tc.wantErr)
			}
			popper.check()
			other.check()
			popper.want("a", InFlight)
			other.want("a", tc.want)
			if err := popper.c.Requeue(a, Failure{RejectedBy: []string{"Fit"}}, popper.now); err != nil {
				t.Fatalf("Requeue on the Core that popped it: %v", err)
			}
			popper.check()
			popper.want("a", InUnschedulable)
		})
	}
}
