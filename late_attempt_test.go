package schedq

import (
	"errors"
	"reflect"
	"testing"
)

// TestLateDoneAndRequeueChangeNothing checks doc.go's Errors section: a
// late or repeated Done is refused with ErrNotInFlight and changes nothing;
// a late or repeated Requeue changes no queued item, and gets
// ErrAlreadyQueued if the key is queued, else ErrNotInFlight. "Changes
// nothing" is checked on the whole state: the Dump, the Counts and the
// Stats before and after the late call.
func TestLateDoneAndRequeueChangeNothing(t *testing.T) {
	fit := Failure{RejectedBy: []string{"Fit"}}
	for _, tc := range []struct {
		name string
		// setup returns the stale attempt, with the queue as the late
		// call finds it.
		setup   func(h *harness) Attempt[string, job]
		requeue bool // the late call is Requeue, else Done
		want    error
	}{
		{name: "Done after Done", want: ErrNotInFlight, setup: func(h *harness) Attempt[string, job] {
			a := h.pop()
			mustOK(h, h.c.Done(a, h.now))
			return a
		}},
		{name: "Done after Requeue", want: ErrNotInFlight, setup: func(h *harness) Attempt[string, job] {
			a := h.pop()
			mustOK(h, h.c.Requeue(a, fit, h.now))
			return a
		}},
		{name: "Done of an attempt a newer pop superseded", want: ErrNotInFlight, setup: func(h *harness) Attempt[string, job] {
			a := h.pop()
			mustOK(h, h.c.Requeue(a, Failure{}, h.now))
			h.c.Activate([]string{"a"}, h.now)
			h.pop() // the newer attempt stays in flight
			return a
		}},
		{name: "Done after Delete and re-add", want: ErrNotInFlight, setup: func(h *harness) Attempt[string, job] {
			a := h.pop()
			mustOK(h, h.c.Requeue(a, fit, h.now))
			mustOK(h, h.c.Delete("a", h.now))
			h.add(mk("a", 5))
			return a
		}},
		{name: "Requeue after Requeue", requeue: true, want: ErrAlreadyQueued, setup: func(h *harness) Attempt[string, job] {
			a := h.pop()
			mustOK(h, h.c.Requeue(a, fit, h.now))
			return a
		}},
		{name: "Requeue after Done", requeue: true, want: ErrNotInFlight, setup: func(h *harness) Attempt[string, job] {
			a := h.pop()
			mustOK(h, h.c.Done(a, h.now))
			return a
		}},
		{name: "Requeue after Done and re-add", requeue: true, want: ErrAlreadyQueued, setup: func(h *harness) Attempt[string, job] {
			a := h.pop()
			mustOK(h, h.c.Done(a, h.now))
			h.add(mk("a", 5))
			return a
		}},
		{name: "Requeue of an attempt a newer pop superseded", requeue: true, want: ErrNotInFlight, setup: func(h *harness) Attempt[string, job] {
			a := h.pop()
			mustOK(h, h.c.Requeue(a, Failure{}, h.now))
			h.c.Activate([]string{"a"}, h.now)
			h.pop()
			return a
		}},
		{name: "Requeue after the re-add's Requeue ended the attempt", requeue: true, want: ErrAlreadyQueued, setup: func(h *harness) Attempt[string, job] {
			a := h.pop()
			h.add(mk("a", 5))
			if err := h.c.Requeue(a, fit, h.now); !errors.Is(err, ErrAlreadyQueued) {
				h.t.Fatalf("first Requeue with a re-added copy: %v, want ErrAlreadyQueued", err)
			}
			return a
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.add(mk("a", 1), mk("b", 0))
			a := tc.setup(h)
			h.step(1)
			d, counts, stats := h.c.Dump(h.now), h.c.Counts(), h.c.Stats()
			var err error
			if tc.requeue {
				err = h.c.Requeue(a, fit, h.now)
			} else {
				err = h.c.Done(a, h.now)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			h.check()
			if got := h.c.Dump(h.now); !reflect.DeepEqual(got, d) {
				t.Errorf("the queue changed:\nbefore %v\nafter  %v", d, got)
			}
			if got := h.c.Counts(); got != counts {
				t.Errorf("counts changed: %+v, then %+v", counts, got)
			}
			if got := h.c.Stats(); !reflect.DeepEqual(got, stats) {
				t.Errorf("stats changed: %+v, then %+v", stats, got)
			}
		})
	}
}

func mustOK(h *harness, err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}
