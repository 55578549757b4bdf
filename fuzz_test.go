package schedq

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

var fuzzNames = []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"}

// fuzzJob returns job i; its priority is fixed by its name, so that
// priorities are distinct and pop order is fully defined.
func fuzzJob(i int, label string, gated bool) job {
	return job{name: fuzzNames[i], prio: int32(i * 10), label: label, gated: gated}
}

var fuzzEvents = []Event{evMachineAdd, evMachineTaint, evMachineLabel, evPlacedAdd, evVolumeAdd, evService, evGateGone, evLabel,
	{Kind: "Machine", Action: actTaint | actRelabel}}

var fuzzFailures = []Failure{
	{},
	{RejectedBy: []string{"Fit"}},
	{RejectedBy: []string{"Affinity"}},
	{RejectedBy: []string{"Fit", "Affinity"}},
	{WaitingOn: []string{"Volume"}},
	{RejectedBy: []string{"Fit"}, WaitingOn: []string{"Volume"}},
	{RejectedBy: []string{"Quiet"}},
	{RejectedBy: []string{"Fit", "Fit"}},
}

var fuzzSteps = []time.Duration{0, 100 * time.Millisecond, 700 * time.Millisecond, time.Second, 3 * time.Second, 11 * time.Second, time.Minute, 6 * time.Minute}

// fuzzRestore builds, from three bytes, a place and a history for
// Restore at now, as a copied queue could read them: the place one of
// activeQ, backoffQ and unschedulable (one time in eight another,
// which must be refused), a Timestamp at or before now, small counts, f's
// plugins (some plugin for the parking area, which parks only what a
// plugin rejected), and a backoff expiry before or after now. Its
// Message says whether the item should be one a PreEnqueue check gates.
func fuzzRestore(f Failure, now time.Time, b1, b2, b3 int) (Location, Status) {
	locs := []Location{InActive, InActive, InBackoff, InBackoff, InBackoff, InUnschedulable, InUnschedulable, 0}
	loc := locs[b1&7]
	if loc == 0 {
		loc = []Location{absent, InGated, InFlight, Location(99)}[(b1>>3)&3]
	}
	st := Status{
		Timestamp:          now.Add(-fuzzSteps[(b1>>5)&7]),
		Attempts:           b2 & 3,
		UnschedulableCount: (b2 >> 2) & 3,
		ConsecutiveErrors:  (b2 >> 4) & 3,
		RejectedBy:         f.RejectedBy,
		WaitingOn:          f.WaitingOn,
		Reasons:            []string{"restored"},
	}
	if loc == InUnschedulable && len(f.RejectedBy)+len(f.WaitingOn) == 0 {
		st.RejectedBy = []string{"Fit"}
	}
	if b2&0x40 != 0 {
		st.InitialAttemptTimestamp = st.Timestamp.Add(-fuzzSteps[b3&7])
	}
	d := fuzzSteps[(b3>>3)&7]
	if b3&0x40 != 0 {
		d = -d
	}
	st.BackoffExpiry = now.Add(d)
	if b2&0x80 != 0 {
		st.Message = "gated"
	}
	if b3&0x80 != 0 {
		st.GatedBy = "Gate" // read from a copy; Restore asks the checks itself
	}
	return loc, st
}

// runOps interprets data as operations on a Core and on the model, and
// fails at the first disagreement or broken invariant.
func runOps(t *testing.T, data []byte) { runOpsWith(t, data, nil) }

// runOpsWith is runOps with mutate applied to the Core's configuration
// (not to the model's, which has no such setting).
func runOpsWith(t *testing.T, data []byte, mutate func(*Config[string, job])) {
	if len(data) == 0 {
		return
	}
	flags := data[0]
	data = data[1:]
	if flags&32 != 0 {
		runGroupOps(t, flags, data)
		return
	}
	cfg := testConfig()
	cfg.DisableQueueingHints = flags&1 != 0
	cfg.DisablePopFromBackoff = flags&2 != 0
	cfg.DisableBackoff = flags&4 != 0
	if flags&8 != 0 {
		cfg.Less, cfg.Priority = nil, jobPrio // the cached default order
	}
	if flags&16 != 0 {
		cfg.Budget = fuzzBudget // wake only what machine events make room for
	}
	if flags&64 != 0 {
		// Fair between labels; a caller's Less needs fairness first, and
		// so, to draw on the bits left, does a run without backoff. (Bit
		// 32, which it had, runs group ops since those came.)
		cfg.Fairness = fairTestConfig(cfg.Priority == nil || cfg.DisableBackoff)
	}
	if flags&128 != 0 {
		cfg.HintClass = classOfLabel // the test hints read only the label
	}
	rec := &balanceRecorder{}
	cfg.Recorder = rec
	m := newModel(cfg)
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := NewCore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	labels := []string{"", "web", "db"}
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	for step := 0; len(data) > 0; step++ {
		op, arg := next(), next()
		m.now = now
		i := arg % len(fuzzNames)
		name := fuzzNames[i]
		var desc string
		switch op % 13 {
		case 0:
			p := fuzzJob(i, labels[(arg>>3)%3], arg&0x80 != 0)
			desc = fmt.Sprintf("Add %+v", p)
			c.Add(p, now)
			m.add(p, now)
		case 1:
			var old job
			if info, _, ok := c.Get(name); ok {
				old = info.Item
			} else {
				old = fuzzJob(i, "", false)
			}
			p := old
			if arg&0x40 != 0 {
				p.gated = !p.gated
			} else {
				p.label = labels[(arg>>3)%3]
			}
			if arg&0x20 != 0 {
				// A new priority, also of a parked item, whose sort keys
				// a wake budget's pop order reads (wakeByClass).
				// Unique still (the model breaks no ties): i*10 or,
				// in reverse order, (n-i)*10+5.
				if p.prio%10 == 0 {
					p.prio = int32((len(fuzzNames)-i)*10 + 5)
				} else {
					p.prio = int32(i * 10)
				}
			}
			desc = fmt.Sprintf("Update %+v -> %+v", old, p)
			c.Update(old, p, now)
			m.update(old, p, now)
		case 2:
			desc = "Delete " + name
			if e1, e2 := c.Delete(name, now), m.deleteKey(name); !errors.Is(e1, e2) || (e1 == nil) != (e2 == nil) {
				t.Fatalf("step %d %s: core %v, model %v", step, desc, e1, e2)
			}
		case 3, 4:
			desc = "Pop"
			got, ok1 := c.Pop(now)
			want, ok2 := m.pop(now)
			if ok1 != ok2 || ok1 && got.Item.name != want.Item.name {
				t.Fatalf("step %d Pop: core %q %v, model %q %v", step, got.Item.name, ok1, want.Item.name, ok2)
			}
		case 5:
			// The attempt in flight's cycle, or (one time in four) a stale
			// one, which must be refused and change nothing.
			var cycle int64
			if f := m.flights[name]; f != nil {
				cycle = f.Cycle
			}
			if arg&0xc0 == 0xc0 {
				cycle--
			}
			desc = fmt.Sprintf("Done %s cycle %d", name, cycle)
			if e1, e2 := c.Done(att(name, cycle), now), m.done(name, cycle); !errors.Is(e1, e2) || (e1 == nil) != (e2 == nil) {
				t.Fatalf("step %d %s: core %v, model %v", step, desc, e1, e2)
			}
		case 6, 7:
			info, loc, ok := c.Get(name)
			f := fuzzFailures[(arg>>3)%len(fuzzFailures)]
			if !ok || loc != InFlight {
				if fl := m.flights[name]; fl != nil {
					info = fl.Info // queued again, and in flight too
				} else {
					if (op/13)%2 == 1 {
						// Not in flight: restored, half the time, with
						// a history drawn from three more bytes.
						p := fuzzJob(i, labels[(arg>>6)%3], false)
						loc, st := fuzzRestore(f, now, next(), next(), next())
						p.gated = st.Message == "gated"
						desc = fmt.Sprintf("Restore %+v %v %+v", p, loc, st)
						e1, e2 := c.Restore(p, loc, st, now), m.restore(p, loc, st, now)
						if (e1 == nil) != (e2 == nil) || !errors.Is(e2, errModelRestoreLoc) && !errors.Is(e1, e2) {
							t.Fatalf("step %d %s: core %v, model %v", step, desc, e1, e2)
						}
						break
					}
					// Not in flight: parked as failed without a pop.
					p := fuzzJob(i, labels[(arg>>6)%3], false)
					desc = fmt.Sprintf("Park %+v %+v", p, f)
					if e1, e2 := c.Park(p, f, now), m.parkNew(p, f, now); !errors.Is(e1, e2) || (e1 == nil) != (e2 == nil) {
						t.Fatalf("step %d %s: core %v, model %v", step, desc, e1, e2)
					}
					break
				}
			}
			cycle := info.Cycle
			if arg&0x80 != 0 {
				cycle-- // a stale cycle
			}
			desc = fmt.Sprintf("Fail %s cycle %d %+v", name, cycle, f)
			e1 := c.Requeue(req(info.Item, cycle), f, now)
			e2 := m.fail(info.Item, cycle, f, now)
			if !errors.Is(e1, e2) || (e1 == nil) != (e2 == nil) {
				t.Fatalf("step %d %s: core %v, model %v", step, desc, e1, e2)
			}
		case 8:
			ev := fuzzEvents[arg%len(fuzzEvents)]
			var obj any = (arg >> 4) % 4
			if ev == evPlacedAdd {
				obj = labels[(arg>>4)%3]
			}
			desc = fmt.Sprintf("MoveAll %s %v", ev.label(), obj)
			c.Move(ev, nil, obj, nil, now)
			m.moveAll(ev, obj, now)
		case 9:
			l := labels[(arg>>3)%3]
			desc = "MoveMatching " + l
			c.Move(evPlacedAdd, nil, l, func(i *Info[job]) bool { return i.Item.label == l }, now)
			m.moveMatching(evPlacedAdd, l, l, now)
		case 10:
			desc = "Activate " + name
			c.Activate([]string{name}, now)
			m.activate(name, now)
		case 11:
			d := fuzzSteps[arg%len(fuzzSteps)]
			now = now.Add(d)
			m.now = now
			desc = fmt.Sprintf("Step %v, FlushBackoffCompleted", d)
			c.flushBackoff(now)
			m.flushBackoff(now)
		case 12:
			d := fuzzSteps[arg%len(fuzzSteps)]
			now = now.Add(d)
			m.now = now
			desc = fmt.Sprintf("Step %v, FlushUnschedulableLeftover", d)
			c.flushLeftover(now)
			m.flushLeftover(now)
		}
		if arg&0x80 != 0 {
			// Nominations change no queue state: the model ignores them,
			// and the checker verifies they follow the items.
			_ = c.Nominate(name, labels[arg%len(labels)])
		}
		if err := c.checkInvariants(); err != nil {
			t.Fatalf("step %d %s: invariants: %v", step, desc, err)
		}
		if err := m.compare(c, fuzzNames); err != nil {
			t.Fatalf("step %d %s (flags %03b): %v", step, desc, flags, err)
		}
		if err := rec.check(c.Counts()); err != nil {
			t.Fatalf("step %d %s: recorder: %v", step, desc, err)
		}
	}
}

// FuzzQueue drives random operation sequences against Core and the model.
// The seed corpus in testdata/fuzz/FuzzQueue runs with plain go test.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 3, 0, 6, 8, 8, 0, 3, 0, 11, 3})
	f.Add([]byte{1, 0, 1, 3, 0, 8, 0, 6, 24, 3, 0, 7, 8})
	f.Add([]byte{2, 0, 0x81, 1, 0x41, 3, 0, 0, 5, 3, 0, 6, 1, 12, 7, 12, 7})
	f.Add([]byte{4, 0, 3, 3, 0, 6, 3, 11, 1, 3, 0})
	// Restores (op 19: an odd op/13 of 6): p0 to backoffQ for 3 s, p1
	// parked behind Fit, p2 (gated) to activeQ; pops, a flush, a move.
	f.Add([]byte{0, 19, 0x08, 2, 0x04, 0x20, 19, 0x09, 5, 0x08, 0, 19, 0x0a, 0, 0x80, 0, 3, 0, 11, 4, 3, 0, 8, 0, 3, 0})
	f.Add([]byte{32, 0, 0, 1, 0, 1, 1, 13, 1, 3, 0, 6, 0x88, 13, 2, 0, 2, 1, 3, 0, 5, 0, 14, 1})
	f.Fuzz(runOps)
}

// FuzzQueueClassBudget is FuzzQueue with budgets, hint classes, the
// cached default order and Config.ClassBudget always on (as
// TestQueueRandomClassBudget), where a budget's tail is deferred with its
// cohorts; the flag byte's low three bits still choose hints, backoff
// from pop and backoff.
func FuzzQueueClassBudget(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 9, 3, 0, 6, 8, 8, 0, 3, 0, 8, 4, 3, 0, 6, 8, 1, 0x11, 12, 7})
	f.Add([]byte{2, 0, 0x81, 1, 0x41, 3, 0, 0, 5, 3, 0, 6, 1, 8, 2, 5, 1, 12, 7, 12, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		data = slices.Clone(data)
		data[0] = data[0]&7 | 8 | 16 | 128
		runOpsWith(t, data, func(c *Config[string, job]) { c.ClassBudget = true })
	})
}

// TestQueueRandomLong runs long random sequences from a fixed seed, so that
// a plain go test covers far more than the corpus.
func TestQueueRandomLong(t *testing.T) {
	randomRuns(t, 42, 600, func(run int) byte { return byte(run % 128) }, nil)
}

// TestQueueRandomHintClass runs TestQueueRandomLong's kind of sequences
// with Config.HintClass set (flag 128), lone items and groups: the model,
// which asks every item's hints, must agree with the queue's memo.
func TestQueueRandomHintClass(t *testing.T) {
	randomRuns(t, 43, 600, func(run int) byte { return byte(run%128) | 128 }, nil)
}

// TestQueueRandomClassBudget runs TestQueueRandomLong's kind of sequences
// with budgets, hint classes, the cached default order and
// Config.ClassBudget, which the model does not have: every item asks one
// slot of the test budgets, so a class that finds no room is no different
// from a Take per item, and the queue must agree with the model's.
func TestQueueRandomClassBudget(t *testing.T) {
	randomRuns(t, 44, 600, func(run int) byte { return byte(run%8) | 8 | 16 | 128 },
		func(c *Config[string, job]) { c.ClassBudget = true })
}

// randomRuns runs runOpsWith(mutate) on 300 inputs (30 with -short) of
// size bytes, drawn by xorshift from seed, with flags(run) as each input's
// flag byte.
func randomRuns(t *testing.T, seed uint64, size int, flags func(run int) byte, mutate func(*Config[string, job])) {
	n := 300
	if testing.Short() {
		n = 30
	}
	rng := xorshift(seed)
	for run := range n {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.next())
		}
		data[0] = flags(run)
		t.Run(fmt.Sprint(run), func(t *testing.T) { runOpsWith(t, data, mutate) })
	}
}

// xorshift is the random tests' generator (Marsaglia's xorshift64): a
// value, so that a test can save and restore its state to make the same
// draws twice.
type xorshift uint64

// next advances x and returns its new state.
func (x *xorshift) next() uint64 {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return uint64(*x)
}

// intn draws from [0, n).
func (x *xorshift) intn(n int) int { return int(x.next()>>1) % n }

// balanceRecorder checks the pushed metrics against the queue: for each
// place, items that came in minus items that left must equal its size, so
// a counter or histogram fed by Incoming and Left can never drift.
type balanceRecorder struct {
	nopRecorder
	in, out [len(locationNames)]int
}

func (r *balanceRecorder) Incoming(q Location, event string) {
	if event == labelPopFromBackoff {
		return // straight from backoffQ into flight; it never waits in activeQ
	}
	r.in[q]++
}

// IncomingGroup counts a group's entity as one: Counts counts entities.
func (r *balanceRecorder) IncomingGroup(q Location, event string, _ int) { r.Incoming(q, event) }

func (r *balanceRecorder) Left(q Location, _ time.Duration) {
	if q == InGated {
		q = InUnschedulable // gated items come in under "unschedulable", as upstream counts them
	}
	r.out[q]++
}

func (r *balanceRecorder) check(c Counts) error {
	got := [3]int{r.in[InActive] - r.out[InActive], r.in[InBackoff] - r.out[InBackoff], r.in[InUnschedulable] - r.out[InUnschedulable]}
	want := [3]int{c.Active, c.Backoff, c.Unschedulable + c.Gated}
	if got != want {
		return fmt.Errorf("incoming minus left (active, backoff, parked) = %v, counts %v", got, want)
	}
	return nil
}
