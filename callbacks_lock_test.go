package schedq

import (
	"context"
	"slices"
	"testing"
	"time"
)

// lockProbe counts the calls of the caller's callbacks, by name, and those
// made while the queue's lock was free. The queue under test is used from
// one goroutine, so a TryLock that succeeds means the lock was not held.
type lockProbe struct {
	q       *Queue[string, job]
	calls   map[string]int
	outside map[string]int
}

func (p *lockProbe) hit(name string) {
	p.calls[name]++
	if p.q != nil && p.q.mu.TryLock() {
		p.q.mu.Unlock()
		p.outside[name]++
	}
}

// probeRecorder is a Recorder whose every method reports to the probe.
type probeRecorder struct{ p *lockProbe }

func (r probeRecorder) Incoming(Location, string)           { r.p.hit("Recorder") }
func (r probeRecorder) Left(Location, time.Duration)        { r.p.hit("Recorder") }
func (r probeRecorder) Scheduled(time.Duration, bool)       { r.p.hit("Recorder") }
func (r probeRecorder) HintStart() int64                    { r.p.hit("Recorder"); return 0 }
func (r probeRecorder) Moved(string, int, int)              { r.p.hit("Recorder") }
func (r probeRecorder) IncomingGroup(Location, string, int) { r.p.hit("Recorder") }
func (r probeRecorder) JoinedGroup(Location, string, int)   { r.p.hit("Recorder") }
func (r probeRecorder) Popped(string)                       { r.p.hit("Recorder") }
func (r probeRecorder) HintDone(int64, string, string, Hint, error) {
	r.p.hit("Recorder")
}

// probeClock is a fixed Clock whose Now reports to the probe.
type probeClock struct{ p *lockProbe }

func (c probeClock) Now() time.Time                         { c.p.hit("Clock.Now"); return t0 }
func (c probeClock) After(d time.Duration) <-chan time.Time { return nil }

// probeBudget is a wake budget with room for everything; its methods
// report to the probe.
type probeBudget struct{ p *lockProbe }

func (b probeBudget) Take(job) bool   { b.p.hit("Budget.Take"); return true }
func (b probeBudget) Return(job) bool { b.p.hit("Budget.Return"); return true }
func (b probeBudget) Key() string     { b.p.hit("Budget.Key"); return "" }

// probedConfig is testConfig with every callback the package documentation
// lists wrapped to report to p; less chooses Config.Less over Priority.
func probedConfig(p *lockProbe, less bool) Config[string, job] {
	cfg := testConfig()
	if less {
		cfg.Less = func(a, b *Info[job]) bool { p.hit("Less"); return byPrio(a, b) }
	} else {
		cfg.Less = nil
		cfg.Priority = func(j job) int32 { p.hit("Priority"); return j.prio }
	}
	cfg.Key = func(j job) string { p.hit("Key"); return j.name }
	cfg.Group = func(j job) string { p.hit("Group"); return j.group }
	cfg.HintClass = func(j job) uint64 { p.hit("HintClass"); return 0 }
	cfg.Match = func(registered, sent Event) bool {
		p.hit("Match")
		return registered.Kind == sent.Kind && registered.Action&sent.Action != 0
	}
	updateEvents := cfg.UpdateEvents
	cfg.UpdateEvents = func(o, n job) []Event { p.hit("UpdateEvents"); return updateEvents(o, n) }
	hints := map[string][]EventHint[job]{}
	for plugin, regs := range cfg.Hints {
		for _, r := range regs {
			if fn := r.Fn; fn != nil {
				r.Fn = func(j job, o, n any) (Hint, error) { p.hit("EventHint.Fn"); return fn(j, o, n) }
			}
			hints[plugin] = append(hints[plugin], r)
		}
	}
	cfg.Hints = hints
	admit := cfg.PreEnqueue[0].Admit
	cfg.PreEnqueue[0].Admit = func(j job) bool { p.hit("Admit"); return admit(j) }
	cfg.Budget = func(ev Event, _, _ any) (Budget[job], bool) {
		p.hit("Budget")
		return probeBudget{p}, ev == evMachineAdd
	}
	cfg.Fairness = &Fairness[job]{
		Tenant:   func(j job) string { p.hit("Fairness.Tenant"); return j.label },
		Weight:   func(string) float64 { p.hit("Fairness.Weight"); return 1 },
		Cost:     func(job) float64 { p.hit("Fairness.Cost"); return 1 },
		HalfLife: time.Minute,
		// Less has no priority levels: fairness orders before it.
		BeforePriority: less,
	}
	cfg.CheckInvariants = func(err error) { p.hit("CheckInvariants"); panic(err) }
	cfg.Recorder = probeRecorder{p}
	cfg.Clock = probeClock{p}
	return cfg
}

// TestQueueCallbacksRunUnderTheLock checks the package documentation's
// claim that every callback of the caller's runs under the Queue's lock,
// inside the operation that calls it, with one documented exception:
// Queue.Pending sorts outside the lock, and with Config.Less set the sort
// calls Less there (on copies of the items' Info).
func TestQueueCallbacksRunUnderTheLock(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		less bool
		// seen are the callbacks the operations below must call, so that
		// the test cannot pass by not calling them; CheckInvariants is
		// called only with a violation, and is left out.
		seen []string
	}{
		{name: "Priority", seen: []string{"Key", "Priority", "Group", "HintClass", "Match", "UpdateEvents",
			"EventHint.Fn", "Admit", "Budget", "Budget.Take", "Budget.Return", "Budget.Key",
			"Fairness.Tenant", "Fairness.Weight", "Fairness.Cost", "Recorder", "Clock.Now",
			"Move.match", "PendingOptions.Match"}},
		{name: "Less", less: true, seen: []string{"Key", "Less", "EventHint.Fn", "Admit",
			"Budget.Take", "Recorder", "Clock.Now", "Move.match", "PendingOptions.Match"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &lockProbe{calls: map[string]int{}, outside: map[string]int{}}
			q, err := New(probedConfig(p, tc.less))
			if err != nil {
				t.Fatal(err)
			}
			p.q = q
			pop := func() Attempt[string, job] {
				t.Helper()
				a, err := q.Pop(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			a1, b1 := job{name: "a", prio: 2, label: "x"}, job{name: "b", prio: 1, label: "x"}
			for _, op := range []struct {
				name string
				do   func()
				// mayBeOutside are the callbacks this operation is
				// documented to call outside the lock.
				mayBeOutside []string
			}{
				{name: "Add", do: func() { _ = q.Add(a1); _ = q.Add(b1); _ = q.Add(job{name: "g", gated: true}) }},
				{name: "Update", do: func() { _ = q.Update(b1, job{name: "b", prio: 1, label: "y"}) }},
				{name: "Pop and Requeue", do: func() {
					a := pop()
					_ = q.Requeue(a, Failure{RejectedBy: []string{"Fit"}})
				}},
				{name: "Update parked", do: func() { _ = q.Update(a1, job{name: "a", prio: 2, label: "z"}) }},
				{name: "Move", do: func() {
					_ = q.Move(evMachineAdd, nil, 2, func(*Info[job]) bool { p.hit("Move.match"); return true })
				}},
				{name: "Pop and Done", do: func() { _ = q.Done(pop()) }},
				{name: "Pop, Done of a woken item", do: func() { _ = q.Done(pop()) }},
				{name: "Ungate", do: func() { _ = q.Update(job{name: "g", gated: true}, job{name: "g"}) }},
				{name: "Park and Activate", do: func() {
					_ = q.Park(job{name: "c", label: "x"}, Failure{RejectedBy: []string{"Volume"}})
					_ = q.Activate("c")
				}},
				{name: "Nominate", do: func() { _ = q.Nominate("c", "n1"); _ = q.Nominated("n1") }},
				{name: "readers", do: func() {
					_, _ = q.Explain("c")
					_ = q.Dump()
					_ = q.Counts()
					_ = q.Stats()
					_, _, _ = q.Get("c")
					_ = q.Tenants()
				}},
				{name: "Pending", do: func() {
					_ = q.Pending(PendingOptions[job]{Match: func(job) bool { p.hit("PendingOptions.Match"); return true }})
				}, mayBeOutside: []string{"Less"}},
				{name: "Delete", do: func() { _ = q.Delete("c"); _ = q.Delete("g") }},
			} {
				clear(p.outside)
				op.do()
				for name, n := range p.outside {
					if !slices.Contains(op.mayBeOutside, name) {
						t.Errorf("%s: %s called %d times without the lock", op.name, name, n)
					}
				}
			}
			for _, name := range tc.seen {
				if p.calls[name] == 0 {
					t.Errorf("%s never called: the test does not reach it", name)
				}
			}
		})
	}
}
