package schedq

import (
	"time"

	"github.com/schedq/schedq/internal/heap"
)

// MoveAllToActiveOrBackoffQueue is a move request: ev happened (with its old
// and new objects), so parked items that it may help are requeued. It
// returns at once, before preCheck runs, if no plugin registered for a
// matching event. Otherwise it looks only at the items rejected by the
// plugins that did (all parked items for a wildcard event); for each that
// passes preCheck (nil passes all) it asks the hints and requeues it to
// activeQ or backoffQ, or leaves it. Gated items move only if their gating
// plugin registered for the event. The event is also recorded for attempts
// in flight, and as the latest move request for the legacy race rule.
// It reports whether anything became poppable.
// O(k log n) for k examined items.
func (c *Core[K, T]) MoveAllToActiveOrBackoffQueue(ev Event, oldObj, newObj any, preCheck func(item T) bool, now time.Time) bool {
	if !ev.IsWildcard() && !c.interested(ev) {
		return false
	}
	return c.movePods(c.candidates(ev), ev, oldObj, newObj, func(e *entry[K, T]) bool {
		return preCheck == nil || preCheck(e.Item)
	}, now)
}

// MoveMatching is the targeted move request: like MoveAllToActiveOrBackoffQueue,
// but only parked items for which match returns true are considered. It is
// the generic form of kube-scheduler's AssignedPodAdded: match can select
// the items whose affinity the new object satisfies. match gets a read-only
// view of the item's Info and must not keep it.
func (c *Core[K, T]) MoveMatching(ev Event, oldObj, newObj any, match func(info *Info[T]) bool, now time.Time) bool {
	if !ev.IsWildcard() && !c.interested(ev) {
		return false
	}
	return c.movePods(c.candidates(ev), ev, oldObj, newObj, func(e *entry[K, T]) bool {
		return match(&e.Info)
	}, now)
}

// interested reports whether any plugin registered for an event matching ev.
func (c *Core[K, T]) interested(ev Event) bool {
	for i := range c.regs {
		if c.regs[i].event.Matches(ev) {
			return true
		}
	}
	return false
}

// candidates collects into c.scratch the parked items that ev could move:
// all of them for a wildcard event, else those indexed under a plugin that
// registered for a matching event, each once.
func (c *Core[K, T]) candidates(ev Event) []*entry[K, T] {
	out := c.scratch[:0]
	if ev.IsWildcard() {
		out = append(out, c.parked.all...)
		c.scratch = out
		return out
	}
	c.epoch++
	last := ""
	for i := range c.regs {
		r := &c.regs[i]
		if r.plugin == last || !r.event.Matches(ev) {
			continue
		}
		last = r.plugin // regs are grouped by plugin
		b := c.parked.buckets[r.plugin]
		if b == nil {
			continue
		}
		for _, e := range b.items {
			if e.visit != c.epoch {
				e.visit = c.epoch
				out = append(out, e)
			}
		}
	}
	c.scratch = out
	return out
}

// movePods requeues the candidates that pass keep, then records the move
// request. It clears the scratch list.
func (c *Core[K, T]) movePods(cands []*entry[K, T], ev Event, oldObj, newObj any, keep func(*entry[K, T]) bool, now time.Time) bool {
	label := c.label(ev)
	moved := 0
	for _, e := range cands {
		if !keep(e) {
			continue
		}
		if e.loc == locGated && !c.gatingMatches(e, ev) {
			continue
		}
		s := c.worth(e, ev, label, oldObj, newObj)
		if s == stayParked {
			continue
		}
		if l := c.requeue(e, s, label, now); l != locParked && l != locGated {
			moved++
		}
	}
	clear(cands)
	c.moveRequestCycle = c.cycle
	c.flights.record(flightEvent[K, T]{event: ev, label: label, oldObj: oldObj, newObj: newObj})
	c.rec.Moved(label, len(cands), moved)
	return moved > 0 && c.Poppable()
}

// Activate moves the named items to activeQ at once, from the parking area
// (after the PreEnqueue checks) or from backoffQ. For a key in flight, the
// activation is remembered and sends the item back after backoff if the
// attempt fails. Unknown keys are ignored. It reports whether anything
// became poppable.
func (c *Core[K, T]) Activate(keys []K, now time.Time) bool {
	became := false
	for _, key := range keys {
		if e := c.queuedEntry(key); e != nil && e.loc != locActive {
			fromBackoff := e.loc == locBackoffUnsched || e.loc == locBackoffError
			if c.toActive(e, LabelForceActivate, fromBackoff, now) {
				became = true
				continue
			}
		}
		if c.flightEntry(key) != nil {
			c.flights.record(flightEvent[K, T]{event: EventForceActivate, target: key, hasTarget: true})
		}
		c.moveRequestCycle = c.cycle
	}
	return became
}

// FlushBackoffCompleted moves every item whose backoff has ended at now to
// activeQ, from both backoff heaps (event BackoffComplete). It reports
// whether anything moved. O(m log n) for m moved items.
func (c *Core[K, T]) FlushBackoffCompleted(now time.Time) bool {
	moved := false
	for _, h := range [...]*heap.Heap[*entry[K, T]]{c.backoffU, c.backoffE} {
		for {
			e, ok := h.Peek()
			if !ok || c.backoffDone(e.BackoffExpiry).After(now) {
				break
			}
			if c.toActive(e, LabelBackoffComplete, true, now) {
				moved = true
			}
		}
	}
	return moved
}

// FlushUnschedulableLeftover retries the parked items that have waited
// longer than MaxInUnschedulable, counted from the later of their Timestamp
// and the last flush that tried them (so a gated item is retried once per
// MaxInUnschedulable, not at every flush). They move, after backoff, with
// the wildcard event UnschedulableTimeout. O(p) for p parked items.
func (c *Core[K, T]) FlushUnschedulableLeftover(now time.Time) bool {
	out := c.scratch[:0]
	for _, e := range c.parked.all {
		from := max(e.Timestamp.UnixNano(), e.lastFlush)
		if time.Duration(now.UnixNano()-from) > c.cfg.MaxInUnschedulable {
			out = append(out, e)
		}
	}
	c.scratch = out
	if len(out) == 0 {
		return false
	}
	for _, e := range out {
		e.FlushedFromUnschedulable = true
		e.lastFlush = now.UnixNano()
	}
	return c.movePods(out, EventUnschedulableTimeout, nil, nil, func(*entry[K, T]) bool { return true }, now)
}
