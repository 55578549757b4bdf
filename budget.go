package schedq

import (
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
}

// roomGroup is one budgeted move request: its budget, how many woken
// items still hold room in it, and the items it left parked.
type roomGroup[K comparable, T any] struct {
	b     Budget[T]
	label string
	woken int
	// recheck: no woken item is left, and the deferred items wait for one
	// more offer at the next backoff flush.
	recheck bool
	// deferred is in pop order. An entry counts only while its deferredBy
	// holds this group; others (woken or moved since, or recycled) are
	// skipped. An item may wait on the room of several events.
	deferred []*entry[K, T]
}

// wakeWithin wakes the ready candidates (each with its strategy) that fit
// in b, in pop order, and defers the rest. It returns how many it woke.
func (c *Core[K, T]) wakeWithin(b Budget[T], label string, ready []*entry[K, T], now time.Time) int {
	slices.SortStableFunc(ready, func(x, y *entry[K, T]) int {
		switch {
		case c.cfg.Less(&x.Info, &y.Info):
			return -1
		case c.cfg.Less(&y.Info, &x.Info):
			return 1
		}
		return 0
	})
	g := &roomGroup[K, T]{b: b, label: label}
	for _, e := range ready {
		if b.Take(e.Item) {
			c.wake(g, e, label, now)
			continue
		}
		e.deferredBy = append(e.deferredBy, g)
		e.lastFlush = now.UnixNano() // it heard an event: no need of the leftover flush yet
		g.deferred = append(g.deferred, e)
	}
	woken := g.woken
	c.settle(g, now)
	return woken
}

// wake requeues e with the strategy its hints chose; it then holds the
// room Take reserved in g, unless a PreEnqueue check parked it again.
func (c *Core[K, T]) wake(g *roomGroup[K, T], e *entry[K, T], label string, now time.Time) {
	clear(e.deferredBy)
	e.deferredBy = e.deferredBy[:0]
	if l := c.requeue(e, e.strategy, label, now); l == locParked || l == locGated {
		g.b.Return(e.Item)
		return
	}
	e.tookFrom = g
	g.woken++
}

// release gives back the room e holds, if any, and offers it to the items
// its event deferred.
func (c *Core[K, T]) release(e *entry[K, T], now time.Time) {
	g := e.tookFrom
	if g == nil {
		return
	}
	e.tookFrom = nil
	g.woken--
	switch {
	case g.b.Return(e.Item):
		c.offer(g, now)
	case g.woken == 0 && len(g.deferred) > 0:
		g.recheck = true
		c.rechecks = append(c.rechecks, g)
	}
}

// offer wakes the deferred items of g that fit now, in order, then settles
// g. O(d) for d deferred items, plus the requeues.
func (c *Core[K, T]) offer(g *roomGroup[K, T], now time.Time) {
	kept := g.deferred[:0]
	for _, e := range g.deferred {
		if !slices.Contains(e.deferredBy, g) {
			continue
		}
		if g.b.Take(e.Item) {
			c.wake(g, e, g.label, now)
			continue
		}
		kept = append(kept, e)
	}
	clear(g.deferred[len(kept):])
	g.deferred = kept
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

// settle ends g once no woken item holds room in it and no recheck is due:
// nothing more will be given back, so its deferred items stay parked, as
// any parked item, for the next event. Their room was used.
func (c *Core[K, T]) settle(g *roomGroup[K, T], _ time.Time) {
	if g.woken > 0 || g.recheck {
		return
	}
	for _, e := range g.deferred {
		if i := slices.Index(e.deferredBy, g); i >= 0 {
			e.deferredBy = slices.Delete(e.deferredBy, i, i+1)
		}
	}
	g.deferred = nil
}
