package schedq

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// TestQueuePopWithEndedContext checks Queue.Pop's doc: an item that can be
// popped at once is returned even if ctx has ended, so Pop with an ended
// context never blocks; with nothing poppable it returns ctx's error.
func TestQueuePopWithEndedContext(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		items   []job
		want    string // the key popped, or "" for ctx's error
		wantErr error
	}{
		{name: "poppable at once", items: []job{mk("a", 1)}, want: "a"},
		{name: "nothing poppable", wantErr: context.Canceled},
		{name: "only a gated item", items: []job{{name: "g", gated: true}}, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t)
			for _, it := range tc.items {
				if err := q.Add(it); err != nil {
					t.Fatal(err)
				}
			}
			a, err := q.Pop(ended)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Pop: %v, want %v", err, tc.wantErr)
			}
			if a.Key != tc.want {
				t.Fatalf("popped %q, want %q", a.Key, tc.want)
			}
		})
	}
}

// TestParkRefusesAQueuedKey checks Core.Park's doc: ErrAlreadyQueued, and
// nothing changed, if the key is queued (anywhere) or in flight.
func TestParkRefusesAQueuedKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		where Location
	}{
		{name: "in activeQ", setup: func(h *harness) { h.add(mk("a", 1)) }, where: InActive},
		{name: "gated", setup: func(h *harness) { h.add(job{name: "a", gated: true}) }, where: InGated},
		{name: "parked", setup: func(h *harness) { h.add(mk("a", 1)); h.attemptFail("a", "Fit") }, where: InUnschedulable},
		{name: "in error backoff", setup: func(h *harness) { h.add(mk("a", 1)); h.attemptFail("a") }, where: InBackoff},
		{name: "in flight", setup: func(h *harness) { h.add(mk("a", 1)); h.pop() }, where: InFlight},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			h.want("a", tc.where)
			d, counts := h.c.Dump(h.now), h.c.Counts()
			err := h.c.Park(mk("a", 9), Failure{RejectedBy: []string{"Volume"}}, h.now)
			if !errors.Is(err, ErrAlreadyQueued) {
				t.Fatalf("Park: %v, want ErrAlreadyQueued", err)
			}
			h.check()
			if got := h.c.Dump(h.now); !reflect.DeepEqual(got, d) || h.c.Counts() != counts {
				t.Errorf("Park changed the queue:\nbefore %v\nafter  %v", d, got)
			}
		})
	}
}

// TestNominateDocClaims checks Core.Nominate's and NominatedTargets' docs:
// a nomination of an unknown key is refused with ErrNotFound, clearing one
// (an empty target) never fails, and NominatedTargets is nil, without
// allocating, when nothing is nominated.
func TestNominateDocClaims(t *testing.T) {
	for _, tc := range []struct {
		name    string
		key     string
		target  string
		wantErr error
	}{
		{name: "queued key", key: "a", target: "t1"},
		{name: "unknown key", key: "ghost", target: "t1", wantErr: ErrNotFound},
		{name: "clearing a queued key", key: "a"},
		{name: "clearing an unknown key", key: "ghost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.add(mk("a", 1))
			if err := h.c.Nominate(tc.key, tc.target); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Nominate(%q, %q): %v, want %v", tc.key, tc.target, err, tc.wantErr)
			}
			got, ok := h.c.Nomination(tc.key)
			if want := tc.target != "" && tc.wantErr == nil; ok != want || (ok && got != tc.target) {
				t.Fatalf("Nomination(%q) = %q, %v", tc.key, got, ok)
			}
			if !ok {
				if h.c.NominatedTargets() != nil {
					t.Fatal("NominatedTargets not nil with nothing nominated")
				}
				if n := testing.AllocsPerRun(10, func() { h.c.NominatedTargets() }); n != 0 {
					t.Fatalf("NominatedTargets allocates %v with nothing nominated", n)
				}
			}
		})
	}
}
