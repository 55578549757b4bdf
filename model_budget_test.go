package schedq

import (
	"fmt"
	"slices"
)

// mGroup is a budgeted move request in the model: its budget, the woken
// items holding room in it, and the items it deferred, in pop order.
type mGroup struct {
	b        Budget[job]
	key      string
	woken    int
	recheck  bool
	dormant  bool
	deferred []*mItem
}

// mRoom is a shared room of keyed budgets in the model.
type mRoom struct {
	woken   int
	dormant []*mGroup
}

func (m *model) room(key string) *mRoom {
	if m.rooms == nil {
		m.rooms = map[string]*mRoom{}
	}
	r := m.rooms[key]
	if r == nil {
		r = &mRoom{}
		m.rooms[key] = r
	}
	return r
}

func (m *model) wakeWithin(b Budget[job], ready []*mItem) {
	slices.SortStableFunc(ready, func(x, y *mItem) int {
		if m.cfg.Less(&x.Info, &y.Info) {
			return -1
		}
		return 1 // priorities are distinct
	})
	if m.fair != nil {
		ready = m.fairWakeOrder(ready)
	}
	g := &mGroup{b: b, key: b.Key()}
	for _, it := range ready {
		if b.Take(it.Item) {
			m.wake(g, it)
		} else {
			it.deferredBy = append(it.deferredBy, g)
			g.deferred = append(g.deferred, it)
		}
	}
	if g.woken > 0 {
		for _, it := range g.deferred {
			it.lastFlush = m.now
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
	if g.key != "" {
		m.room(g.key).woken++
	}
}

func (m *model) giveBack(it *mItem) {
	g := it.tookFrom
	if g == nil {
		return
	}
	it.tookFrom = nil
	g.woken--
	var r *mRoom
	if g.key != "" {
		r = m.rooms[g.key]
		r.woken--
	}
	back := g.b.Return(it.Item)
	if !back && g.woken == 0 && len(g.deferred) > 0 && !g.recheck {
		g.recheck = true
		m.rechecks = append(m.rechecks, g)
	}
	if back {
		m.offer(g)
	}
	if r != nil && (back || r.woken == 0) {
		gs := r.dormant
		r.dormant = nil
		for _, d := range gs {
			d.dormant = false
			m.offer(d)
		}
		if r.woken == 0 && len(r.dormant) == 0 {
			delete(m.rooms, g.key)
		}
	}
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
	if g.woken > 0 || g.recheck || g.dormant {
		return
	}
	if len(g.deferred) > 0 && g.key != "" {
		if r := m.rooms[g.key]; r != nil && r.woken > 0 {
			g.dormant = true
			r.dormant = append(r.dormant, g)
			return
		}
	}
	for _, d := range g.deferred {
		d.deferredBy = slices.DeleteFunc(d.deferredBy, func(x *mGroup) bool { return x == g })
	}
	g.deferred = nil
}

// queued reports whether it is the model's current item for its name.
func (m *model) queued(it *mItem) bool { return m.items[it.Item.name] == it }

// slotBudget is the fuzz test's budget: a machine with room for n items,
// where room comes back whenever an attempt that held it ends; key, if
// set, is the room it shares with other events' budgets (Budget.Key).
type slotBudget struct {
	free int
	key  string
}

func (b *slotBudget) Key() string { return b.key }

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
	n, i := 1, 0
	if v, ok := newObj.(int); ok {
		n, i = v%3, v
	}
	if ev.Action == actTaint { // taint events share a room per machine
		return &slotBudget{free: n, key: fmt.Sprint("m", i%2)}, true
	}
	return &slotBudget{free: n}, true
}
