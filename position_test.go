package schedq

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// positionModes are the orders whose positions TestPositionExact checks.
var positionModes = []struct {
	name   string
	mutate func(*Config[string, job])
}{
	{"default order", func(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio }},
	{"caller's Less", func(*Config[string, job]) {}},
	{"fair, priority first", fairBy(map[string]float64{"a": 2})},
	{"fair, before priority", fairBy(map[string]float64{"a": 2}, func(f *Fairness[job]) { f.BeforePriority = true })},
	{"fair, caller's Less", func(c *Config[string, job]) {
		c.Fairness = &Fairness[job]{Tenant: func(p job) string { return p.label }, BeforePriority: true, HalfLife: time.Minute}
	}},
	{"fair, costs", fairBy(map[string]float64{"b": 3}, func(f *Fairness[job]) {
		f.Cost = func(p job) float64 { return map[string]float64{"a": 2, "b": 1, "c": 0.5}[p.label] }
	})},
}

// TestPositionExact: for every item in activeQ, Explain's Ahead is the
// number of items popped before it when the queue is drained at once.
func TestPositionExact(t *testing.T) {
	for _, mode := range positionModes {
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("%s/%d", mode.name, seed), func(t *testing.T) {
				h := newHarness(t, mode.mutate)
				r := rand.New(rand.NewPCG(seed, 7))
				tenants := []string{"a", "b", "c"}
				n := 0
				// Some history, a whole half-life apart, so that the
				// decayed usages are exact in floating point.
				for range 3 {
					for range r.IntN(6) {
						h.add(lj(fmt.Sprint("h", n), int32(r.IntN(3)), tenants[r.IntN(3)]))
						n++
					}
					h.drain()
					h.step(time.Minute)
				}
				for range 40 {
					h.add(lj(fmt.Sprint("x", n), int32(r.IntN(3)), tenants[r.IntN(3)]))
					n++
					if r.IntN(4) == 0 {
						h.step(time.Millisecond)
					}
				}
				// Deletions leave stale slots behind in the lazy heaps.
				for i := range 5 {
					h.c.Delete(fmt.Sprint("x", n-1-3*i), h.now)
				}
				h.check()
				h.step(time.Minute - 40*time.Millisecond)
				listed := h.c.Pending(PendingOptions[job]{Limit: 1000}, h.now)
				want := map[string]int{}
				for name := range h.c.keys {
					x, err := h.c.Explain(name, h.now)
					if err != nil || x.Position == nil {
						t.Fatalf("Explain(%s): %v, %+v", name, err, x.Position)
					}
					want[name] = x.Position.Ahead
				}
				if listed.Total != len(want) || len(listed.Items) != len(want) {
					t.Fatalf("Pending listed %d of %d, want %d", len(listed.Items), listed.Total, len(want))
				}
				for i, name := range h.drain() {
					if want[name] != i {
						t.Errorf("%s popped %d-th, Explain said %d ahead", name, i, want[name])
					}
					if it := listed.Items[i]; it.Key != name || it.Rank != i || it.Position == nil || it.Position.Ahead != i {
						t.Errorf("%s popped %d-th, Pending listed %s there (rank %d, %+v)", name, i, it.Key, it.Rank, it.Position)
					}
				}
			})
		}
	}
}

// TestPositionApart: items backing off and parked are counted apart, and
// an item backing off gets an estimate no sooner than its backoff's end.
func TestPositionApart(t *testing.T) {
	h := newHarness(t, func(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio })
	h.add(mk("hi", 9), mk("mid", 5), mk("err", 7))
	h.attemptFail("hi", "Quiet") // parked: nothing wakes Quiet
	h.attemptFail("err")         // error backoff
	h.add(mk("lo", 1), mk("lo2", 1))
	h.step(100 * time.Millisecond)
	x, err := h.c.Explain("lo2", h.now)
	if err != nil {
		t.Fatal(err)
	}
	p := x.Position
	if p.Ahead != 2 || p.Active != 3 || p.BackoffAhead != 1 || p.ParkedAhead != 1 {
		t.Fatalf("position %+v, want 2 ahead of 3, 1 backing off and 1 parked ahead", p)
	}
	// Two pops in 100ms: 10 pops a second; 2 ahead is about 200ms.
	if !p.Estimated || p.EstimatedWait != 200*time.Millisecond {
		t.Errorf("estimate %+v, want 200ms", p)
	}
	if s := x.String(); !strings.Contains(s, "2 ahead of 3") || !strings.Contains(s, "estimate") {
		t.Errorf("String lacks the position:\n%s", s)
	}
	x, _ = h.c.Explain("err", h.now)
	if b := x.Position; !b.Estimated || b.EstimatedWait < x.BackoffExpiry.Sub(h.now) || b.Ahead != 0 {
		t.Errorf("backing off: %+v, want first in line, and no sooner than backoff's end %v", b, x.BackoffExpiry)
	}
	x, _ = h.c.Explain("hi", h.now)
	if x.Position.Estimated || x.Position.Ahead != 0 {
		t.Errorf("parked: %+v, want first in order and no estimate", x.Position)
	}
	h.pop()
	x, _ = h.c.Explain("mid", h.now)
	if x.Position != nil {
		t.Errorf("in flight: position %+v, want none", x.Position)
	}
}
