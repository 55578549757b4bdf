package schedq

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// forbiddenClock fails the test if anything reads it: Core must not.
type forbiddenClock struct{ t *testing.T }

func (c forbiddenClock) Now() time.Time {
	c.t.Error("Core read Config.Clock.Now")
	return t0
}

func (c forbiddenClock) After(time.Duration) <-chan time.Time {
	c.t.Error("Core called Config.Clock.After")
	return nil
}

// roomBudget is a wake budget of a fixed number of items per event.
type roomBudget struct{ room *int }

func (b roomBudget) Take(job) bool {
	if *b.room == 0 {
		return false
	}
	*b.room--
	return true
}
func (b roomBudget) Return(job) bool { *b.room++; return true }
func (b roomBudget) Key() string     { return "" }

// coreTranscript drives a new Core through seed's random operations, in
// virtual time, and returns everything it answered: popped keys, errors,
// places, and every so often the Dump, Pending and nominations.
func coreTranscript(t *testing.T, seed uint64, mutate func(*Config[string, job])) string {
	t.Helper()
	cfg := testConfig()
	cfg.Clock = forbiddenClock{t}
	cfg.CheckInvariants = func(err error) { t.Fatalf("seed %d: %v", seed, err) }
	mutate(&cfg)
	c, err := NewCore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	now := t0
	var out strings.Builder
	var flights []Attempt[string, job]
	name := func() string { return fmt.Sprintf("j%02d", r.IntN(40)) }
	labels := []string{"x", "y", "z"}
	plugins := []string{"Fit", "Affinity", "Volume", "Quiet"}
	for i := range 3000 {
		switch op := r.IntN(12); op {
		case 0, 1, 2: // few priorities, many ties
			c.Add(job{name: name(), prio: int32(r.IntN(2)), label: labels[r.IntN(3)], gated: r.IntN(8) == 0}, now)
		case 3, 4:
			if a, ok := c.Pop(now); ok {
				fmt.Fprintf(&out, "pop %s %d\n", a.Key, a.Cycle)
				flights = append(flights, a)
			}
		case 5:
			if len(flights) > 0 {
				k := r.IntN(len(flights))
				a := flights[k]
				flights = append(flights[:k], flights[k+1:]...)
				var f Failure
				for _, p := range plugins {
					if r.IntN(3) == 0 {
						f.RejectedBy = append(f.RejectedBy, p)
					}
				}
				fmt.Fprintf(&out, "requeue %s: %v\n", a.Key, c.Requeue(a, f, now))
			}
		case 6:
			if len(flights) > 0 {
				a := flights[0]
				flights = flights[1:]
				fmt.Fprintf(&out, "done %s: %v\n", a.Key, c.Done(a, now))
			}
		case 7: // every parked item of a plugin may wake at once: ties
			evs := []Event{evMachineAdd, evMachineTaint, evPlacedAdd, evVolumeAdd, evGateGone}
			var obj any = r.IntN(3)
			if r.IntN(2) == 0 {
				obj = labels[r.IntN(3)]
			}
			c.Move(evs[r.IntN(len(evs))], nil, obj, nil, now)
		case 8:
			n := name()
			if info, _, ok := c.Get(n); ok {
				nw := info.Item
				nw.label, nw.gated = labels[r.IntN(3)], false
				c.Update(info.Item, nw, now)
			}
		case 9:
			fmt.Fprintf(&out, "delete: %v\n", c.Delete(name(), now))
		case 10:
			c.Activate([]string{name(), name()}, now)
			_ = c.Nominate(name(), labels[r.IntN(3)])
		case 11:
			now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
			c.Tick(now)
			d, ok := c.NextDeadline()
			fmt.Fprintf(&out, "tick %v %v %v\n", now.Sub(t0), d.Sub(t0), ok)
		}
		if i%100 == 0 {
			fmt.Fprintf(&out, "%s\n%s\n%v %v\n", c.Dump(now), c.Pending(PendingOptions[job]{}, now),
				c.NominatedTargets(), c.Counts())
			for _, tg := range labels {
				fmt.Fprintf(&out, "%s: %v\n", tg, c.Nominated(tg))
			}
		}
	}
	for {
		a, ok := c.Pop(now)
		if !ok {
			break
		}
		fmt.Fprintf(&out, "drain %s\n", a.Key)
	}
	return out.String()
}

// TestCoreIsDeterministic checks the package documentation's claims on
// Core: the same operations at the same times give the same results (ties
// broken by entry order, never by map order: the runs are repeated, and Go
// randomises each map iteration), and Core reads no clock (Config.Clock
// fails the test if read) and starts no goroutines.
func TestCoreIsDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config[string, job])
	}{
		{name: "Less", mutate: func(*Config[string, job]) {}},
		{name: "Priority", mutate: func(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio }},
		{name: "hints off", mutate: func(c *Config[string, job]) { c.DisableQueueingHints = true }},
		{name: "fairness", mutate: func(c *Config[string, job]) {
			c.Less, c.Priority = nil, jobPrio
			c.Fairness = &Fairness[job]{Tenant: func(j job) string { return j.label }, HalfLife: time.Minute}
		}},
		{name: "HintClass and budget", mutate: func(c *Config[string, job]) {
			c.HintClass = func(j job) uint64 { return uint64(len(j.label)) }
			c.Budget = func(Event, any, any) (Budget[job], bool) {
				room := 3
				return roomBudget{&room}, true
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(3) {
				before := runtime.NumGoroutine()
				want := coreTranscript(t, seed, tc.mutate)
				for run := range 3 {
					if got := coreTranscript(t, seed, tc.mutate); got != want {
						t.Fatalf("seed %d, run %d: the same operations gave other results:\n%s", seed, run+2, firstDiff(want, got))
					}
				}
				if after := runtime.NumGoroutine(); after > before {
					t.Errorf("seed %d: %d goroutines after the runs, %d before", seed, after, before)
				}
			}
		})
	}
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n first: %s\n again: %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(al), len(bl))
}
