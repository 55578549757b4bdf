package schedq

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

var fuzzGroups = []string{"", "g0", "g1", "p0"} // "p0" is also an item key

// runGroupOps interprets data as operations on a Core with groups on: the
// item operations of runOps, each item in a group the data picks, plus
// SetGroup and DeleteGroup, and group attempts ended with Done, DoneMembers (with
// leftovers), Requeue with rejections and errors. After each step it checks the
// invariants (every member in exactly one place, entity sizes, counts),
// the members' places against groupModel (which group objects exist and
// which groups are in flight, kept here apart from the queue), that a
// group's pop takes exactly its queued members, that nothing is lost (a key
// added and neither deleted nor placed is still there), and that the
// recorder balances per entity.
func runGroupOps(t *testing.T, flags byte, data []byte) {
	cfg := testConfig()
	groupsOn(&cfg)
	cfg.Hints["Quiet"] = nil
	cfg.DisableQueueingHints = flags&1 != 0
	cfg.DisablePopFromBackoff = flags&2 != 0
	cfg.DisableBackoff = flags&4 != 0
	if flags&8 != 0 {
		cfg.Less, cfg.Priority = nil, jobPrio
	}
	if flags&16 != 0 {
		cfg.Budget = fuzzBudget // budgets for lone items; groups ignore them
	}
	if flags&128 != 0 {
		cfg.HintClass = classOfLabel // the hints read only the label
	}
	rec := &balanceRecorder{}
	cfg.Recorder = rec
	c, err := NewCore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	labels := []string{"", "web", "db"}
	owed := map[string]bool{}
	attempts := map[string]Attempt[string, job]{} // latest attempt by group ("" + key for lone)
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	// flying returns the attempt that key is in flight in, if any.
	flying := func(key string) (Attempt[string, job], bool) {
		info, loc, ok := c.Get(key)
		if !ok || loc != InFlight {
			return Attempt[string, job]{}, false
		}
		if info.Item.group != "" {
			a, ok := attempts[info.Item.group+"/"]
			return a, ok && a.Cycle == info.Cycle
		}
		a, ok := attempts["/"+key]
		return a, ok
	}
	// leaving marks the members of group attempt a that end with it.
	leaving := func(a Attempt[string, job], placed []int) {
		for i, m := range a.Members {
			if placed != nil && !slices.Contains(placed, i) {
				continue
			}
			if info, loc, ok := c.Get(m.Key); ok && loc == InFlight && info.Item.group == a.Group {
				owed[m.Key] = false
			}
		}
	}
	gm := newGroupModel()
	for step := 0; len(data) > 0; step++ {
		gm.snapshot(c)
		op, arg := next(), next()
		i := arg % len(fuzzNames)
		name := fuzzNames[i]
		var desc string
		switch op % 15 {
		case 0:
			p := fuzzJob(i, labels[(arg>>3)%3], arg&0x80 != 0)
			p.group = fuzzGroups[next()%len(fuzzGroups)]
			desc = fmt.Sprintf("Add %+v", p)
			c.Add(p, now)
			owed[name] = true
		case 1:
			old := fuzzJob(i, "", false)
			if info, _, ok := c.Get(name); ok {
				old = info.Item
			}
			p := old
			switch arg >> 6 {
			case 0:
				p.gated = !p.gated
			case 1:
				p.group = fuzzGroups[(arg>>3)%len(fuzzGroups)]
			default:
				p.label = labels[(arg>>3)%3]
			}
			desc = fmt.Sprintf("Update %+v -> %+v", old, p)
			c.Update(old, p, now)
			// An update of a key in flight changes nothing owed: a delete
			// during the attempt still drops it.
			_, loc, found := c.Get(name)
			owed[name] = owed[name] || found && loc != InFlight
		case 2:
			desc = "Delete " + name
			if err := c.Delete(name, now); err == nil {
				owed[name] = false
			} else if owed[name] {
				t.Fatalf("step %d %s: %v, but it is owed", step, desc, err)
			}
		case 3, 4:
			desc = "Pop"
			if a, ok := c.Pop(now); ok {
				desc = fmt.Sprintf("Pop %q%q", a.Group, a.Key)
				attempts[a.Group+"/"+a.Key] = a
				if a.Group != "" && len(a.Members) == 0 {
					t.Fatalf("step %d: group %q popped without members", step, a.Group)
				}
				if a.Group != "" {
					if err := gm.popped(a); err != nil {
						t.Fatalf("step %d %s: model: %v", step, desc, err)
					}
				}
			}
		case 5:
			a, ok := flying(name)
			if !ok {
				continue
			}
			stale := arg&0xc0 == 0xc0
			if stale {
				a.Cycle--
			}
			desc = fmt.Sprintf("Done %q%q cycle %d", a.Group, a.Key, a.Cycle)
			if !stale {
				if a.Group != "" {
					leaving(a, nil)
				} else if _, loc, _ := c.Get(name); loc == InFlight {
					owed[name] = false
				}
			}
			if err := c.Done(a, now); (err != nil) != stale {
				t.Fatalf("step %d %s: %v", step, desc, err)
			}
			if !stale && a.Group != "" {
				delete(gm.flying, a.Group)
			}
			if !stale && a.Group == "" {
				_, _, found := c.Get(name)
				owed[name] = found
			}
		case 6, 7:
			a, ok := flying(name)
			if !ok {
				// A member (or lone item) put back as failed without a
				// pop, as after a failed binding.
				p := fuzzJob(i, "", false)
				p.group = fuzzGroups[(arg>>3)%len(fuzzGroups)]
				f := fuzzFailures[(arg>>5)%len(fuzzFailures)]
				desc = fmt.Sprintf("Park %+v %+v", p, f)
				err := c.Park(p, f, now)
				switch {
				case err == nil:
					owed[name] = true
				case !errors.Is(err, ErrAlreadyQueued):
					t.Fatalf("step %d %s: %v", step, desc, err)
				}
				break
			}
			f := fuzzFailures[(arg>>3)%len(fuzzFailures)]
			if a.Group != "" && arg&0x80 != 0 {
				desc = fmt.Sprintf("DoneMembers %q [0] %q", a.Group, f.Message)
				leaving(a, []int{0})
				if err := c.DoneMembers(a, []int{0}, f.Message, now); err != nil {
					t.Fatalf("step %d %s: %v", step, desc, err)
				}
				delete(gm.flying, a.Group)
				break
			}
			desc = fmt.Sprintf("Requeue %q%q %+v", a.Group, a.Key, f)
			if err := c.Requeue(a, f, now); err != nil && !errors.Is(err, ErrAlreadyQueued) {
				t.Fatalf("step %d %s: %v", step, desc, err)
			}
			if a.Group != "" {
				delete(gm.flying, a.Group)
			}
		case 8:
			ev := fuzzEvents[arg%len(fuzzEvents)]
			var obj any = (arg >> 4) % 4
			if ev == evPlacedAdd {
				obj = labels[(arg>>4)%3]
			}
			desc = fmt.Sprintf("MoveAll %s %v", ev.label(), obj)
			c.Move(ev, nil, obj, nil, now)
		case 9:
			l := labels[(arg>>3)%3]
			desc = "MoveMatching " + l
			c.Move(evPlacedAdd, nil, l, func(i *Info[job]) bool { return i.Item.label == l }, now)
		case 10:
			desc = "Activate " + name
			c.Activate([]string{name}, now)
		case 11:
			now = now.Add(fuzzSteps[arg%len(fuzzSteps)])
			desc = "FlushBackoff"
			c.flushBackoff(now)
		case 12:
			now = now.Add(fuzzSteps[arg%len(fuzzSteps)])
			desc = "FlushLeftover"
			c.flushLeftover(now)
		case 13:
			g := fuzzGroups[1+arg%(len(fuzzGroups)-1)]
			spec := GroupSpec{MinCount: 1 + (arg>>2)%3, Priority: int32(arg>>4) % 4 * 10}
			desc = fmt.Sprintf("SetGroup %s %+v", g, spec)
			if err := c.SetGroup(g, spec, now); err != nil {
				t.Fatalf("step %d %s: %v", step, desc, err)
			}
			gm.known[g] = true
		case 14:
			g := fuzzGroups[1+arg%(len(fuzzGroups)-1)]
			desc = "DeleteGroup " + g
			if c.DeleteGroup(g, now) == nil {
				gm.known[g] = false
			}
		}
		if err := c.checkInvariants(); err != nil {
			t.Fatalf("step %d %s: invariants: %v", step, desc, err)
		}
		if err := gm.check(c); err != nil {
			t.Fatalf("step %d %s: model: %v", step, desc, err)
		}
		for _, n := range fuzzNames {
			if _, _, ok := c.Get(n); owed[n] && !ok {
				t.Fatalf("step %d %s: %s lost", step, desc, n)
			}
		}
		if err := rec.check(c.entityCounts()); err != nil {
			t.Fatalf("step %d %s: recorder: %v", step, desc, err)
		}
	}
}

// TestGroupQueueRandomLong runs long random group sequences from a fixed
// seed (flag bit 32 of the fuzz input turns groups on).
func TestGroupQueueRandomLong(t *testing.T) {
	randomRuns(t, 7, 800, func(run int) byte { return byte(32 | run%32) }, nil)
}
