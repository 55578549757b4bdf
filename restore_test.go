package schedq

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// restoreScript drives a queue from the state restoreFixture leaves:
// it wakes the parked item, then each second for a minute pops and
// fails everything poppable, and wakes the failed items, and returns what it saw: each pop, and each
// failed item's next backoff expiry.
func restoreScript(h *harness) []string {
	h.t.Helper()
	var seen []string
	h.move(evVolumeAdd, nil)
	for i := 0; i < 60; i++ {
		h.c.Tick(h.now)
		for {
			a, ok := h.c.Pop(h.now)
			if !ok {
				break
			}
			h.fail(a.Item.name, "Fit")
			x := h.info(a.Item.name)
			seen = append(seen, fmt.Sprintf("%v %s: attempts %d, unschedulable %d, backoff until %v",
				h.now.Sub(t0), a.Item.name, x.Attempts, x.UnschedulableCount, x.BackoffExpiry.Sub(t0)))
		}
		h.step(time.Second)
		h.move(evMachineAdd, 2)
	}
	return seen
}

// restoreFixture leaves, at t0 + 20 s: a backing off after its third
// failure (4 s), b parked behind Volume after two, and c and d in
// activeQ, never tried.
func restoreFixture(t *testing.T) *harness {
	h := newHarness(t, func(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio })
	h.add(mk("a", 1), mk("b", 1))
	for _, plugin := range []string{"Fit", "Volume"} {
		h.attemptFail("a", "Fit")
		h.attemptFail("b", plugin)
		h.step(10 * time.Second)
		h.move(evMachineAdd, 2)
		h.c.Tick(h.now)
	}
	h.add(mk("c", 1))
	h.attemptFail("a", "Fit")
	h.move(evMachineAdd, 2)
	h.add(mk("d", 1))
	h.want("a", InBackoff)
	h.want("b", InUnschedulable)
	h.want("c", InActive)
	return h
}

// TestRestoreCopiesAnItemsPlaceAndHistory: a queue that Restore fills
// from another's items, their places and statuses, holds them as the
// first does (Get reads the same), and goes on as it does: the same
// pops in the same order, and each failure backs off as long, from the
// counts the copies carried. Queued as new, a's and b's next backoff
// would be the second step's and c, stamped now, would go after the
// parked b once b woke.
func TestRestoreCopiesAnItemsPlaceAndHistory(t *testing.T) {
	orig := restoreFixture(t)
	cp := newHarness(t, func(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio })
	cp.now = orig.now
	names := []string{"c", "d", "a", "b"}
	for _, name := range names {
		x, loc, _ := orig.c.Get(name)
		if err := cp.c.Restore(x.Item, loc, x.Status, cp.now); err != nil {
			t.Fatalf("Restore(%s): %v", name, err)
		}
		cp.check()
	}
	for _, name := range names {
		x, loc, _ := orig.c.Get(name)
		y, cloc, _ := cp.c.Get(name)
		if cloc != loc || !y.Timestamp.Equal(x.Timestamp) || !y.BackoffExpiry.Equal(x.BackoffExpiry) || y.Attempts != x.Attempts ||
			y.UnschedulableCount != x.UnschedulableCount || !slices.Equal(y.RejectedBy, x.RejectedBy) ||
			!y.InitialAttemptTimestamp.Equal(x.InitialAttemptTimestamp) {
			t.Errorf("%s: restored %v %+v; the queue copied holds it %v %+v", name, cloc, y.Status, loc, x.Status)
		}
	}
	want, got := restoreScript(orig), restoreScript(cp)
	if !slices.Equal(got, want) {
		t.Errorf("the restored queue went on as\n%q\nthe queue it copies as\n%q", got, want)
	}
}

// TestRestoreRefuses: Restore refuses an item already queued, a group
// member, and a place other than activeQ, backoffQ and unschedulable,
// and queues nothing.
func TestRestoreRefuses(t *testing.T) {
	tests := []struct {
		name string
		item job
		loc  Location
		want error
	}{
		{"already queued", mk("a", 1), InActive, ErrAlreadyQueued},
		{"group member", gm("g", "m", 1), InActive, ErrInvalidGroup},
		{"in flight", mk("b", 1), InFlight, nil},
		{"gated", mk("b", 1), InGated, nil},
		{"nowhere", mk("b", 1), absent, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn)
			h.add(mk("a", 1))
			err := h.c.Restore(tc.item, tc.loc, Status{Timestamp: h.now}, h.now)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Restore: %v; want an error (%v)", err, tc.want)
			}
			if n := h.c.Counts(); n.Active != 1 || n.Backoff+n.Unschedulable != 0 {
				t.Errorf("counts %+v after a refused Restore; want a alone", n)
			}
			h.check()
		})
	}
}

// TestRestoreBackoffEndsAsTheFlushCounts: an item restored to backoffQ
// joins activeQ at once only if the backoff flush would have released it
// by now (strictly after its expiry; with pop-from-backoff, at the end of
// its 1-second window), so that it stands where the copied queue, whose
// flush has not yet run, holds it; otherwise it waits in backoffQ with
// the copied expiry. Without backoff it joins activeQ.
func TestRestoreBackoffEndsAsTheFlushCounts(t *testing.T) {
	at := t0.Add(500 * time.Millisecond)
	tests := []struct {
		name   string
		mutate func(*Config[string, job])
		expiry time.Time
		want   Location
	}{
		{"window not over", popFromBackoff, at.Add(-100 * time.Millisecond), InBackoff},
		{"later window", popFromBackoff, at.Add(time.Second), InBackoff},
		{"window over", popFromBackoff, t0.Add(-time.Nanosecond), InActive},
		{"no windows, at the expiry", noPopFromBackoff, at, InBackoff},
		{"no windows, after the expiry", noPopFromBackoff, at.Add(-time.Nanosecond), InActive},
		{"no backoff", func(c *Config[string, job]) { c.DisableBackoff = true }, at.Add(time.Minute), InActive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.mutate)
			h.now = at
			st := Status{Timestamp: at.Add(-time.Second), UnschedulableCount: 1, RejectedBy: []string{"Fit"}, BackoffExpiry: tc.expiry}
			if err := h.c.Restore(mk("a", 1), InBackoff, st, h.now); err != nil {
				t.Fatalf("Restore: %v", err)
			}
			h.check()
			x, loc, _ := h.c.Get("a")
			if loc != tc.want {
				t.Fatalf("restored to %v; want %v", loc, tc.want)
			}
			if wantExpiry := map[bool]time.Time{true: tc.expiry}[loc == InBackoff]; !x.BackoffExpiry.Equal(wantExpiry) {
				t.Errorf("backoff expiry %v; want %v", x.BackoffExpiry, wantExpiry)
			}
		})
	}
}

// popFromBackoff leaves the test configuration, pop-from-backoff on.
func popFromBackoff(*Config[string, job]) {}

// noPopFromBackoff turns pop-from-backoff off.
func noPopFromBackoff(c *Config[string, job]) { c.DisablePopFromBackoff = true }
