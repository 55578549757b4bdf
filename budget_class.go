package schedq

import (
	"cmp"
	"slices"
	"time"
)

// wakeByClass is wakeWithin's pass over the ready candidates of g (none
// of which holds room) with Config.ClassBudget and the default order. It
// takes them from a heap in pop order only until every class among them
// has found no room: after that no candidate can fit (see take), so the
// rest stay in the heap, g's tail, unsorted. A burst of events that each
// free room for one of many parked items of a few classes costs
// O(k + w log k) each, for k candidates and w taken from the heap, not
// O(k log k).
func (c *Core[K, T]) wakeByClass(g *roomGroup[K, T], ready []*entry[K, T], now time.Time) {
	keys := slices.Grow(c.orderKeys[:0], len(ready))
	var classes classSet
	n := 0
	for i, e := range ready {
		c.sortKeys(e) // refreshed: a parked item's priority may have changed
		keys = append(keys, orderKey{prio: e.prio, ts: e.ts, i: int32(i)})
		if classes.first(e.hclass) {
			n++
		}
	}
	heapify(keys, lessKey)
	var full classSet
	for nfull := 0; len(keys) > 0 && nfull < n; {
		var k orderKey
		k, keys = heapPop(keys, lessKey)
		e := ready[k.i]
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
	if len(keys) > 0 {
		// Still a heap: the same keys, in the same places.
		g.tail = c.newTail(len(keys))
		var tc classSet
		for j, k := range keys {
			e := ready[k.i]
			if tc.first(e.hclass) {
				g.tailClasses = append(g.tailClasses, e.hclass)
			}
			m := e.ext()
			m.deferCount++
			m.lastDeferrer = g
			if g.woken > 0 {
				m.lastFlush = now.UnixNano() // see wakeWithin
			}
			g.tail[j] = tailItem[K, T]{k: k, r: deferRef[K, T]{e: e, gen: m.deferGen}}
		}
	}
	clear(keys)
	c.orderKeys = keys[:0]
}

// newTail returns a tail of n zero items, reusing an ended group's if
// one is large enough. O(1) besides the allocation.
func (c *Core[K, T]) newTail(n int) []tailItem[K, T] {
	if k := len(c.tails); k > 0 {
		t := c.tails[k-1]
		c.tails[k-1] = nil
		c.tails = c.tails[:k-1]
		if cap(t) >= n {
			return t[:n]
		}
	}
	return make([]tailItem[K, T], n)
}

// recycleTail keeps an ended group's tail for newTail, cleared so that it
// pins no entry: a forecast defers thousands of pods per pod end, and
// their tails were most of what it allocated. O(len(t)).
func (c *Core[K, T]) recycleTail(t []tailItem[K, T]) {
	if cap(t) == 0 || len(c.tails) >= maxTails {
		return
	}
	clear(t)
	c.tails = append(c.tails, t[:0])
}

// maxTails bounds the tails kept for reuse.
const maxTails = 64

// tailItem is a deferred item of a group's tail, with its sort keys.
type tailItem[K comparable, T any] struct {
	k orderKey
	r deferRef[K, T]
}

// offerTail offers g's tail, after its other deferred items (full holds
// the classes that found no room in this offer): in pop order from the
// heap, until every class of the tail has found no room; the items it
// defers again join g.deferred, in order, and the rest stay in the tail.
// O(w log t) for w items taken from a tail of t, besides the requeues.
func (c *Core[K, T]) offerTail(g *roomGroup[K, T], full *classSet, now time.Time) {
	done := full.hasAll(g.tailClasses)
	for len(g.tail) > 0 && !done {
		var it tailItem[K, T]
		it, g.tail = heapPop(g.tail, lessTail[K, T])
		if !it.r.waits() {
			continue
		}
		if c.take(g.b, it.r.e, full) {
			c.wake(g, it.r.e, g.label, now)
			continue
		}
		g.deferred = append(g.deferred, it.r)
		done = full.hasAll(g.tailClasses)
	}
	if len(g.tail) == 0 {
		c.recycleTail(g.tail)
		g.tail, g.tailClasses = nil, nil
	}
}

func lessKey(x, y orderKey) bool { return cmpOrderKey(x, y) < 0 }

func lessTail[K comparable, T any](x, y tailItem[K, T]) bool { return cmpOrderKey(x.k, y.k) < 0 }

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

// heapify makes h a binary min-heap by less. O(len(h)).
func heapify[E any](h []E, less func(x, y E) bool) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, less)
	}
}

// heapPop removes the least element of heap h and returns it, and h
// shortened. O(log len(h)).
func heapPop[E any](h []E, less func(x, y E) bool) (E, []E) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	var zero E
	h[last] = zero
	h = h[:last]
	if last > 0 {
		siftDown(h, 0, less)
	}
	return top, h
}

func siftDown[E any](h []E, i int, less func(x, y E) bool) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
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
