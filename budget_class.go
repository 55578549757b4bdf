package schedq

import (
	"time"

	"github.com/schedq/schedq/internal/heap"
)

// wakeByClass is wakeWithin's pass over the ready candidates of g (none
// of which holds room) with Config.ClassBudget and the default order. It
// takes them from a heap in pop order only until every class among them
// has found no room: after that no candidate can fit (see take), so the
// rest stay in the heap, g's tail, unsorted. A burst of events that each
// free room for one of many parked items of a few classes costs
// O(k + w log k) each, for k candidates and w taken from the heap, not
// O(k log k). When the candidates are the members of the cohorts the
// request moved (c.moving), the tail's items are deferred with their
// cohorts (deferLazily): no item of the tail is written to.
func (c *Core[K, T]) wakeByClass(g *roomGroup[K, T], ready []*entry[K, T], now time.Time) {
	// The slots' last key is the index in ready, so ties keep ready's
	// order; the array becomes g's tail if anything is left in it.
	lazy := c.movingMembers() == len(ready) // before any leaves its cohort
	slots := c.newTail(len(ready))[:0]
	var classes classSet
	n := 0
	if lazy {
		// The candidates are the moving cohorts' members: lone items,
		// whose keys are current (see park), of their cohort's class.
		for _, co := range c.moving {
			if len(co.members) > 0 && classes.first(co.key.class) {
				n++
			}
		}
		for i, e := range ready {
			slots = append(slots, heap.NewSlot(e.prio, e.ts, uint32(i), deferRef[K, T]{e: e}))
		}
	} else {
		for i, e := range ready {
			if e.kind != kindLone {
				c.sortKeys(e) // a lone item's are current: see park
			}
			slots = append(slots, heap.NewSlot(e.prio, e.ts, uint32(i), deferRef[K, T]{e: e}))
			if classes.first(e.hclass) {
				n++
			}
		}
	}
	var h tailHeap[K, T]
	h.Init(slots)
	var full classSet
	for nfull := 0; h.Len() > 0 && nfull < n; {
		s, _ := h.Pop()
		e := s.Ref.e
		if !full.has(e.hclass) {
			if g.b.Take(e.Item) {
				c.wake(g, e, g.label, now)
				continue
			}
			full.first(e.hclass)
			nfull++
		}
		g.deferEntry(e)
	}
	if h.Len() == 0 {
		c.recycleTail(h.Release())
		return
	}
	g.tail = h
	if c.deferLazily(g, lazy, now.UnixNano()) {
		return
	}
	c.markTail(g, now)
}

// markTail defers the items of g's tail one by one. O(t) for t items.
func (c *Core[K, T]) markTail(g *roomGroup[K, T], now time.Time) {
	var tc classSet
	g.eachTail(func(r deferRef[K, T]) {
		e := r.e
		if tc.first(e.hclass) {
			g.tailClasses = append(g.tailClasses, e.hclass)
		}
		m := e.ext()
		m.deferCount++
		m.lastDeferrer = g
		if g.woken > 0 {
			m.lastFlush, m.flushSeq = now.UnixNano(), g.seq // see wakeWithin
		}
	})
}

// newTail returns a tail of n zero items, reusing an ended group's if
// one is large enough. O(1) besides the allocation.
func (c *Core[K, T]) newTail(n int) []heap.Slot[deferRef[K, T]] {
	if k := len(c.tails); k > 0 {
		t := c.tails[k-1]
		c.tails[k-1] = nil
		c.tails = c.tails[:k-1]
		c.tailSlots -= cap(t)
		if cap(t) >= n {
			return t[:n]
		}
	}
	return make([]heap.Slot[deferRef[K, T]], n)
}

// recycleTail keeps an ended group's tail for newTail, cleared so that it
// pins no entry, while the kept tails hold at most maxTailSlots slots in
// all. A forecast's pod ends come in bursts at one instant, each
// deferring thousands of pods, and the burst's groups hold their tails
// until the next backoff flush: about 180 at once in BenchmarkForecast,
// whose tails were a third of what it allocated while the pool kept 64.
// O(len(t)).
func (c *Core[K, T]) recycleTail(t []heap.Slot[deferRef[K, T]]) {
	if cap(t) == 0 || c.tailSlots+cap(t) > maxTailSlots {
		return
	}
	clear(t)
	c.tails = append(c.tails, t[:0])
	c.tailSlots += cap(t)
}

// maxTailSlots bounds the slots of the tails kept for reuse: 48 MiB at 24
// bytes a slot. They are never more than the groups held at once (a tail
// is made only when none is kept), so the bound matters only after
// bursts larger than that: BenchmarkForecast's groups hold up to 1.25 M
// slots at once (about 190 tails of 5,000 pods and a few smaller), and
// with 2^20 kept each burst made the rest anew, 15% of what a forecast
// allocated.
const maxTailSlots = 1 << 21

// tailHeap holds a group's tail: deferred items in pop order, keyed by
// priority, timestamp and their index among the event's candidates.
type tailHeap[K comparable, T any] = heap.SlotHeap[deferRef[K, T]]

// offerTail offers g's tail, after its other deferred items (full holds
// the classes that found no room in this offer): in pop order from the
// heap, until every class of the tail has found no room; the items it
// defers again join g.deferred, in order, and the rest stay in the tail.
// O(w log t) for w items taken from a tail of t, besides the requeues.
func (c *Core[K, T]) offerTail(g *roomGroup[K, T], full *classSet, now time.Time) {
	done := full.hasAll(g.tailClasses)
	for g.tailLen() > 0 && !done {
		r := g.popTail()
		if !g.waits(r.e) {
			continue
		}
		if c.take(g.b, r.e, full) {
			c.wake(g, r.e, g.label, now)
			continue
		}
		if g.lazyTail {
			g.countOut(r.e) // out of the tail: counted one by one
		}
		g.deferred = append(g.deferred, r)
		done = full.hasAll(g.tailClasses)
	}
	if g.tailLen() == 0 {
		c.dropTail(g)
		g.tailClasses = nil
	}
}

// hasAll reports whether every class of cs is in s. O(len(cs)) once s
// has its map.
func (s *classSet) hasAll(cs []uint64) bool {
	for _, c := range cs {
		if !s.has(c) {
			return false
		}
	}
	return true
}
