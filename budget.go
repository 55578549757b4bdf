package schedq

import (
	"cmp"
	"slices"
	"time"
)

// Budget is the room an event makes: the free capacity of a machine that
// joined, say. With Config.Budget set, a move request offers the items its
// hints would wake to the event's budget, in the order the queue would pop
// them, and wakes only those that fit; the others stay parked, deferred.
// Its methods run under the queue's lock and must be pure and fast.
type Budget[T any] interface {
	// Take reserves room for item if it fits, and reports whether it did.
	// It must be additive: whether a set of items fits must not depend on
	// the order they are offered in, as for a capacity. When they all fit
	// the queue offers them in any order; otherwise in pop order, after
	// undoing (with Return) what it took.
	Take(item T) bool
	// Return releases the room Take reserved for item: the item's attempt
	// has ended (placed, failed or given up), or the item is gone. It
	// reports whether room may have come back, in which case the deferred
	// items are offered again: false when the item used the room it was
	// given, true when unsure. When the last woken item of an event ends,
	// its deferred items are offered once more at the next backoff flush
	// (Tick), whatever Return said, so room that turned out unused waits at
	// most FlushBackoffInterval, never for the leftover flush. A budget
	// that measures the world afresh in Take sees what the items really
	// used, and by then what the other events' woken items used.
	Return(item T) bool
	// Key names the room the budget shares with the budgets of other
	// events of the same key (the room of one machine, that a join and a
	// departure on it both offer), or is "" for a room of the event's
	// own. While an item holds room under a key, the items that other
	// events of that key deferred wait for it, and are offered the room
	// when it comes back, whichever event woke the item that held it.
	Key() string
}

// NominatedBudget is a Budget whose room the items nominated to a target
// (Nominate) may hold already: a preemptor waiting for the room its
// victims free, say. The queue calls UseNominated once on each budget
// that Config.Budget returns and that implements it, before its first
// Take, with a function that returns the items nominated to a target in
// their latest versions, as Nominated does. The function reads the
// queue's own nominations without its lock: the budget may call it only
// from Take and Return, which run under that lock.
type NominatedBudget[T any] interface {
	Budget[T]
	UseNominated(nominated func(target string) []T)
}

// roomGroup is one budgeted move request: its budget, how many woken
// items still hold room in it, and the items it left parked.
type roomGroup[K comparable, T any] struct {
	b     Budget[T]
	label string
	key   string // Budget.Key: the shared room's key, or ""
	woken int
	// seq is parked.seq at its making: an item whose deferrals were
	// cleared since is no longer deferred by it (waits).
	seq uint64
	// recheck: no woken item is left, and the deferred items wait for one
	// more offer at the next backoff flush.
	recheck bool
	// dormant: no woken item is left, but items of other events hold room
	// under the same key; the deferred items wait for it (roomKey).
	dormant bool
	// ended: settled for good, its deferred items let go.
	ended bool
	// deferred is in pop order, each item counted in its deferCount. An
	// entry counts only while its deferrals have not been cleared since
	// the group was made (waits); others (woken or moved since, or
	// recycled) are skipped. An item may wait on the room of several
	// events.
	deferred []deferRef[K, T]
	// tail, with Config.ClassBudget and the default order, holds deferred
	// items that come after all of deferred in pop order, as a heap on
	// their sort keys, not sorted: their classes (among tailClasses) found
	// no room when they were deferred (wakeByClass, offerTail).
	tail        tailHeap[K, T]
	tailClasses []uint64
	// ord, when the tail is a cohort's records in pop order instead of a
	// heap (cohort_order.go): the records from cur on that are g's
	// candidates, ordN of them.
	ord  *cohortOrder[K, T]
	cur  int
	ordN int
	// lazy, if the tail's items are deferred with their cohorts
	// (cohort_defer.go): those cohorts, whose members that joined before
	// seq and are not in deferred are the tail's items, uncounted.
	// moved is the tail's items that left those cohorts for another
	// while parked (recohort), counted one by one since.
	lazy     []*cohort[K, T]
	lazyTail bool
	moved    []*entry[K, T]
}

// hasDeferred reports whether g holds deferred items (some may be stale).
func (g *roomGroup[K, T]) hasDeferred() bool { return len(g.deferred)+g.tailLen() > 0 }

// eachDeferred calls f with each of g's deferred items (stale ones too).
func (g *roomGroup[K, T]) eachDeferred(f func(deferRef[K, T])) {
	for _, r := range g.deferred {
		f(r)
	}
	g.eachTail(f)
}

// deferRef is an item a group deferred.
type deferRef[K comparable, T any] struct {
	e *entry[K, T]
}

// waits reports whether e, which g deferred, still waits on g's room:
// its deferrals have not been cleared since g was made. O(1) to check,
// so that an offer costs O(d) for d deferred items, however many events
// each waits on.
func (g *roomGroup[K, T]) waits(e *entry[K, T]) bool { return e.more.clearedAt < g.seq }

// deferEntry appends e to g's deferred items and counts g among the live
// events e waits on. O(1) amortized.
func (g *roomGroup[K, T]) deferEntry(e *entry[K, T]) {
	m := e.ext()
	m.deferCount++
	m.lastDeferrer = g
	g.deferred = append(g.deferred, deferRef[K, T]{e: e})
}

// wakeWithin wakes the ready candidates (each with its strategy) that fit
// in b, in pop order, and defers the rest. It returns how many it woke.
//
// The caller has offered them to b already, as it found them, until the
// first that did not fit: fit of them fit. Often the room holds them all;
// then the order they are offered in cannot matter (Take is additive), and
// sorting them is not needed.
func (c *Core[K, T]) wakeWithin(b Budget[T], label string, ready []*entry[K, T], fit int, now time.Time) int {
	c.parked.seq++
	g := &roomGroup[K, T]{b: b, label: label, seq: c.parked.seq, key: b.Key()}
	if fit == len(ready) {
		for _, e := range ready {
			c.wake(g, e, label, now)
		}
		return g.woken
	}
	for _, e := range ready[:fit] {
		b.Return(e.Item) // undone: they are offered again, in pop order
	}
	if c.cfg.Priority != nil && c.cfg.ClassBudget && c.cfg.HintClass != nil && c.fair == nil {
		c.wakeByClass(g, ready, now)
	} else {
		c.popOrder(ready)
		if c.fair != nil {
			c.fairOrder(ready, now.UnixNano())
		}
		var full classSet
		for _, e := range ready {
			if c.take(b, e, &full) {
				c.wake(g, e, label, now)
				continue
			}
			g.deferEntry(e)
		}
	}
	return c.wakeDone(g, now)
}

// wakeDone ends a move request's offer of room g: the items it deferred
// heard their event, and g settles. It returns how many items g woke.
func (c *Core[K, T]) wakeDone(g *roomGroup[K, T], now time.Time) int {
	if g.woken > 0 {
		// The event made room and others took it: the deferred items heard
		// their event, and wait for room, not for the leftover flush.
		// (wakeByClass sets the tail's as it makes it.)
		for _, r := range g.deferred {
			c.noteFlushed(r.e, now.UnixNano())
		}
	}
	woken := g.woken
	c.settle(g, now)
	return woken
}

// popOrder sorts parked entries into the order the queue would pop them.
// With the default order it compares the cached sort keys (refreshed
// here: a parked item's priority may have changed), with a caller's Less
// it calls Less; ties keep the order they came in. O(k log k).
func (c *Core[K, T]) popOrder(es []*entry[K, T]) {
	if c.cfg.Priority == nil {
		slices.SortStableFunc(es, func(x, y *entry[K, T]) int {
			switch {
			case c.cfg.Less(&x.Info, &y.Info):
				return -1
			case c.cfg.Less(&y.Info, &x.Info):
				return 1
			}
			return 0
		})
		return
	}
	keys := slices.Grow(c.orderKeys[:0], len(es))
	for i, e := range es {
		c.sortKeys(e)
		keys = append(keys, orderKey{prio: e.prio, ts: e.ts, i: int32(i)})
	}
	slices.SortFunc(keys, cmpOrderKey)
	sorted := slices.Grow(c.orderScratch[:0], len(es))
	for _, k := range keys {
		sorted = append(sorted, es[k.i])
	}
	copy(es, sorted)
	clear(sorted)
	c.orderKeys, c.orderScratch = keys[:0], sorted[:0]
}

// orderKey is an entry's sort keys beside its index, so that sorting
// moves small values and never reads the entries.
type orderKey struct {
	prio int32
	i    int32
	ts   int64
}

// cmpOrderKey is the pop order of sort keys: higher priority first, then
// the earlier timestamp, then the earlier index (a total order, so that
// an unstable sort is deterministic).
func cmpOrderKey(x, y orderKey) int {
	if x.prio != y.prio {
		return cmp.Compare(y.prio, x.prio)
	}
	if x.ts != y.ts {
		return cmp.Compare(x.ts, y.ts)
	}
	return cmp.Compare(x.i, y.i)
}

// take offers e to b, unless an item of e's class found no room in b
// earlier in the same offer (Config.ClassBudget; full holds those
// classes). Within one offer the room only shrinks: Take is additive, and
// an item that a PreEnqueue check parks again gives back only what it
// took, so a class that did not fit still does not. O(1) besides Take,
// once full has its map.
func (c *Core[K, T]) take(b Budget[T], e *entry[K, T], full *classSet) bool {
	if !c.cfg.ClassBudget || c.cfg.HintClass == nil {
		return b.Take(e.Item)
	}
	if full.has(e.hclass) {
		return false
	}
	if b.Take(e.Item) {
		return true
	}
	full.first(e.hclass)
	return false
}

// wake requeues e with the strategy its hints chose; it then holds the
// room Take reserved in g, unless a PreEnqueue check parked it again.
func (c *Core[K, T]) wake(g *roomGroup[K, T], e *entry[K, T], label string, now time.Time) {
	c.clearDeferred(e)
	if l := c.requeue(e, strategyOf(e), label, now); l == locParked || l == locGated {
		g.b.Return(e.Item)
		return
	}
	e.ext().tookFrom = g
	g.woken++
	if g.key != "" {
		c.roomKey(g.key).woken++
	}
}

// roomKey returns the state of the shared room of key, made on first use.
func (c *Core[K, T]) roomKey(key string) *roomKey[K, T] {
	rk := c.rooms[key]
	if rk == nil {
		if c.rooms == nil {
			c.rooms = map[string]*roomKey[K, T]{}
		}
		rk = &roomKey[K, T]{}
		c.rooms[key] = rk
	}
	return rk
}

// roomKey is a shared room: how many woken items hold room in it, and the
// events whose deferred items wait for them.
type roomKey[K comparable, T any] struct {
	woken   int
	dormant []*roomGroup[K, T]
}

// release gives back the room e holds, if any. If room may have come back
// it is offered to the items e's event deferred, and to those the events
// of the same key deferred; when the last woken item of the event ends,
// its deferred items get one more offer at the next backoff flush anyway.
func (c *Core[K, T]) release(e *entry[K, T], now time.Time) {
	g := e.tookFromGroup()
	if g == nil {
		return
	}
	e.more.tookFrom = nil
	g.woken--
	var rk *roomKey[K, T]
	if g.key != "" {
		rk = c.rooms[g.key]
		rk.woken--
	}
	back := g.b.Return(e.Item)
	if !back && g.woken == 0 && !g.recheck {
		if g.hasDeferred() {
			g.recheck = true
			c.rechecks = append(c.rechecks, g)
		} else {
			// Nothing left to offer: it ends now, and the cohorts it
			// deferred (cohort_defer.go) stop listing it.
			c.settle(g, now)
		}
	}
	if back {
		c.offer(g, now)
	}
	if rk != nil && (back || rk.woken == 0) {
		c.wakeDormant(g.key, rk, now)
	}
}

// wakeDormant offers the room of key to the events that wait on it.
func (c *Core[K, T]) wakeDormant(key string, rk *roomKey[K, T], now time.Time) {
	gs := rk.dormant
	rk.dormant = nil
	for _, g := range gs {
		g.dormant = false
		c.offer(g, now)
	}
	if rk.woken == 0 && len(rk.dormant) == 0 {
		delete(c.rooms, key)
	}
}

// offer wakes the deferred items of g that fit now, in order, then settles
// g. O(d) for d deferred items, plus the requeues; a Take per item, or
// with Config.ClassBudget per class until a class finds no room. The
// tail, if any, is offered after the rest (offerTail).
func (c *Core[K, T]) offer(g *roomGroup[K, T], now time.Time) {
	kept := g.deferred[:0]
	var full classSet
	for _, r := range g.deferred {
		if !g.waits(r.e) {
			continue
		}
		if c.take(g.b, r.e, &full) {
			c.wake(g, r.e, g.label, now)
			continue
		}
		kept = append(kept, r)
	}
	clear(g.deferred[len(kept):])
	g.deferred = kept
	if g.tailLen() > 0 {
		c.offerTail(g, &full, now)
	}
	c.settle(g, now)
}

// recheckRoom offers the deferred items of the events whose woken items
// have all ended once more, then lets those events go. O(d) for d deferred
// items in all.
func (c *Core[K, T]) recheckRoom(now time.Time) {
	gs := c.rechecks
	c.rechecks = nil
	for _, g := range gs {
		g.recheck = false
		c.offer(g, now)
	}
}

// settle decides what becomes of g once it has offered its room: while its
// woken items hold room, or a recheck is due, it waits; with nothing
// deferred it ends; if items of other events hold room under its key, it
// waits for them, dormant; otherwise it ends, and its deferred items stay
// parked, as any parked item, for the next event. Their room was used.
func (c *Core[K, T]) settle(g *roomGroup[K, T], _ time.Time) {
	if g.woken > 0 || g.recheck || g.dormant {
		return
	}
	if g.hasDeferred() && g.key != "" {
		if rk := c.rooms[g.key]; rk != nil && rk.woken > 0 {
			g.dormant = true
			rk.dormant = append(rk.dormant, g)
			return
		}
	}
	uncount := func(r deferRef[K, T]) {
		if g.waits(r.e) {
			r.e.more.deferCount--
		}
	}
	if g.lazyTail {
		for _, r := range g.deferred {
			uncount(r)
		}
		for _, e := range g.moved {
			uncount(deferRef[K, T]{e: e})
		}
		c.endLazy(g)
	} else {
		g.eachDeferred(uncount)
	}
	g.ended = true
	c.dropTail(g)
	g.deferred, g.tailClasses, g.moved = nil, nil, nil
}
