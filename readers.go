package schedq

import (
	"maps"
	"slices"
)

// Get returns the item with key and where it is: queued, or else in flight.
// O(1).
func (c *Core[K, T]) Get(key K) (Info[T], Location, bool) {
	if e := c.keys[key]; e != nil {
		return e.Info, e.loc.location(), true
	}
	return Info[T]{}, Absent, false
}

// Counts returns the number of items in each place. O(1).
func (c *Core[K, T]) Counts() Counts {
	return Counts{
		Active:        c.active.Len(),
		Backoff:       c.backoffU.Len() + c.backoffE.Len(),
		Unschedulable: c.parked.len() - c.parked.gated,
		Gated:         c.parked.gated,
		InFlight:      c.flights.len(),
	}
}

// Queued is an item with its place, as the debug readers list it.
type Queued[T any] struct {
	Location Location
	Info[T]
}

// Pending lists every queued item: activeQ in pop order, then backoffQ by
// expiry, then the parking area in its internal order. O(n log n).
func (c *Core[K, T]) Pending() []Queued[T] {
	out := make([]Queued[T], 0, c.queued)
	add := func(es []*entry[K, T], less func(a, b *entry[K, T]) int) {
		es = slices.Clone(es)
		if less != nil {
			slices.SortStableFunc(es, less)
		}
		for _, e := range es {
			out = append(out, Queued[T]{Location: e.loc.location(), Info: e.Info})
		}
	}
	byHeap := func(a, b *entry[K, T]) int {
		switch {
		case c.cfg.Less(&a.Info, &b.Info):
			return -1
		case c.cfg.Less(&b.Info, &a.Info):
			return 1
		}
		return 0
	}
	var active []*entry[K, T]
	c.active.Each(func(e *entry[K, T]) { active = append(active, e) })
	add(active, byHeap)
	add(append(heapItems(c.backoffU), heapItems(c.backoffE)...), func(a, b *entry[K, T]) int {
		return a.BackoffExpiry.Compare(b.BackoffExpiry)
	})
	add(c.parked.all, nil)
	return out
}

// InFlight lists the items in flight, oldest pop first. O(f).
func (c *Core[K, T]) InFlight() []Info[T] {
	out := make([]Info[T], 0, c.flights.len())
	for e := c.flights.head; e != nil; e = e.next {
		out = append(out, e.Info)
	}
	return out
}

// UnschedulableByPlugin returns, for each plugin, how many queued items it
// holds back: items whose last attempt it rejected (until their next pop),
// and items it gates. It feeds the scheduler_unschedulable_pods gauge. O(p)
// for p plugins.
func (c *Core[K, T]) UnschedulableByPlugin() map[string]int {
	return maps.Clone(c.byPlugin)
}

// InFlightEvents returns how many recorded events of each label are kept for
// attempts in flight, and, under "PodPopped", how many attempts are in
// flight. It feeds the scheduler_inflight_events gauge. O(events).
func (c *Core[K, T]) InFlightEvents() map[string]int {
	out := map[string]int{}
	if n := c.flights.len(); n > 0 {
		out[LabelPodPopped] = n
	}
	for i := range c.flights.log {
		out[c.flights.log[i].label]++
	}
	return out
}

func heapItems[K comparable, T any](h heapView[K, T]) []*entry[K, T] {
	out := make([]*entry[K, T], h.Len())
	for i := range out {
		out[i] = h.At(i)
	}
	return out
}
