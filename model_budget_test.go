package schedq

import "slices"

// mGroup is a budgeted move request in the model: its budget, the woken
// items holding room in it, and the items it deferred, in pop order.
type mGroup struct {
	b        Budget[job]
	woken    int
	recheck  bool
	deferred []*mItem
}

func (m *model) wakeWithin(b Budget[job], ready []*mItem) {
	slices.SortStableFunc(ready, func(x, y *mItem) int {
		if m.cfg.Less(&x.Info, &y.Info) {
			return -1
		}
		return 1 // priorities are distinct
	})
	g := &mGroup{b: b}
	for _, it := range ready {
		if b.Take(it.Item) {
			m.wake(g, it)
		} else {
			it.deferredBy = append(it.deferredBy, g)
			it.lastFlush = m.now
			g.deferred = append(g.deferred, it)
		}
	}
	m.settle(g)
}

func (m *model) wake(g *mGroup, it *mItem) {
	it.deferredBy = nil
	m.requeue(it, it.strategy, m.now)
	if it.loc == InUnschedulable || it.loc == InGated {
		g.b.Return(it.Item)
		return
	}
	it.tookFrom = g
	g.woken++
}

func (m *model) giveBack(it *mItem) {
	g := it.tookFrom
	if g == nil {
		return
	}
	it.tookFrom = nil
	g.woken--
	if !g.b.Return(it.Item) {
		if g.woken == 0 && len(g.deferred) > 0 {
			g.recheck = true
			m.rechecks = append(m.rechecks, g)
		}
		return
	}
	m.offer(g)
}

// recheck offers the deferred items of the budgets due a recheck.
func (m *model) recheck() {
	gs := m.rechecks
	m.rechecks = nil
	for _, g := range gs {
		g.recheck = false
		m.offer(g)
	}
}

func (m *model) offer(g *mGroup) {
	var kept []*mItem
	for _, d := range g.deferred {
		if !slices.Contains(d.deferredBy, g) || d.loc != InUnschedulable || !m.queued(d) {
			continue
		}
		if g.b.Take(d.Item) {
			m.wake(g, d)
		} else {
			kept = append(kept, d)
		}
	}
	g.deferred = kept
	m.settle(g)
}

func (m *model) settle(g *mGroup) {
	if g.woken > 0 || g.recheck {
		return
	}
	for _, d := range g.deferred {
		d.deferredBy = slices.DeleteFunc(d.deferredBy, func(x *mGroup) bool { return x == g })
	}
	g.deferred = nil
}

// queued reports whether it is the model's current item for its name.
func (m *model) queued(it *mItem) bool { return m.items[it.Item.name] == it }

// slotBudget is the fuzz test's budget: a machine with room for n items,
// where room comes back whenever an attempt that held it ends.
type slotBudget struct{ free int }

func (b *slotBudget) Take(job) bool {
	if b.free == 0 {
		return false
	}
	b.free--
	return true
}

func (b *slotBudget) Return(j job) bool {
	b.free++
	return j.prio%20 != 0 // some items say their room was used
}

// fuzzBudget gives machine events room for newObj%3 items (an int newObj),
// or for one.
func fuzzBudget(ev Event, _, newObj any) (Budget[job], bool) {
	if ev.Kind != "Machine" {
		return nil, false
	}
	n := 1
	if i, ok := newObj.(int); ok {
		n = i % 3
	}
	return &slotBudget{free: n}, true
}
