package schedq

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/schedq/schedq/internal/heap"
)

// checkInvariants verifies the queue's internal consistency and returns
// every violation found, or nil: each queued key is in exactly one
// sub-queue and points back at its place; heap orders hold; the plugin
// index and counters match the parked items; the in-flight list and event
// log agree. O(n): tests call it directly, and Config.CheckInvariants
// makes the queue call it after every operation.
func (c *Core[K, T]) checkInvariants() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	total := c.checkActive(bad) + c.checkBackoff(bad) + c.checkParked(bad)
	c.checkIndex(bad)
	c.checkCohorts(bad)
	c.checkKeys(total, bad)
	c.checkPluginCounts(bad)
	c.checkFlights(bad)
	c.checkRoom(bad)
	c.checkGroups(bad)
	c.checkNominations(bad)
	return errors.Join(errs...)
}

// checkActive verifies activeQ's heap and that each of its entries is the
// map's, and returns how many it holds. O(n).
func (c *Core[K, T]) checkActive(bad func(string, ...any)) int {
	if err := c.active.Check(); err != nil {
		bad("%v", err)
	}
	c.active.Each(func(e *entry[K, T]) {
		if !c.owns(e) {
			bad("activeQ key %v is not the map's entry", e.key)
		}
	})
	return c.active.Len()
}

// checkBackoff verifies both backoff heaps: order, positions, the map's
// ownership, an expiry, and that each entry is in the heap its last
// failure chose. It returns how many they hold. O(n).
func (c *Core[K, T]) checkBackoff(bad func(string, ...any)) int {
	backingOff := func(name string, e *entry[K, T], want loc) {
		if e.loc != want {
			bad("%s key %v: loc %d", name, e.key, e.loc)
		}
		if !c.owns(e) {
			bad("%s key %v is not the map's entry", name, e.key)
		}
		if e.BackoffExpiry.IsZero() {
			bad("%s: key %v has no backoff expiry", name, e.key)
		}
		if e.rejected() != (want == locBackoffUnsched) {
			bad("%s: key %v in the wrong backoff heap", name, e.key)
		}
	}
	for i := range c.backoffU.Len() {
		e := c.backoffU.At(i)
		if int(e.idx) != i {
			bad("backoffQ(unschedulable)[%d] key %v: idx %d", i, e.key, e.idx)
		}
		if i > 0 && c.backoffU.Less(i, heap.Parent(i)) {
			bad("backoffQ(unschedulable): heap order broken at %d (key %v)", i, e.key)
		}
		backingOff("backoffQ(unschedulable)", e, locBackoffUnsched)
	}
	if err := c.backoffE.Check(); err != nil {
		bad("%v", err)
	}
	c.backoffE.Each(func(e *entry[K, T]) { backingOff("backoffQ(error)", e, locBackoffError) })
	return c.backoffU.Len() + c.backoffE.Len()
}

// checkParked verifies each parked or gated entry: its position, the
// map's ownership, the gated count, and that it is indexed under exactly
// the plugins that hold it. It returns how many are parked. O(n).
func (c *Core[K, T]) checkParked(bad func(string, ...any)) int {
	gated := 0
	for i, e := range c.parked.all {
		if int(e.idx) != i || (e.loc != locParked && e.loc != locGated) {
			bad("parked[%d] key %v: loc %d pos %d", i, e.key, e.loc, e.idx)
		}
		if !c.owns(e) {
			bad("parked[%d] key %v is not the map's entry", i, e.key)
		}
		if (e.loc == locGated) != e.gated() {
			bad("parked key %v: loc %d but gating plugin %q", e.key, e.loc, e.GatedBy)
		}
		if e.loc == locGated {
			gated++
		}
		c.checkSlots(e, bad)
	}
	if gated != c.parked.gated {
		bad("gated count %d, want %d", c.parked.gated, gated)
	}
	return len(c.parked.all)
}

// checkSlots verifies that a parked entry is indexed under exactly its
// gating plugin, or else the plugins that rejected it or it waits on.
func (c *Core[K, T]) checkSlots(e *entry[K, T], bad func(string, ...any)) {
	want := map[string]bool{}
	if e.gated() {
		want[e.GatedBy] = true
	} else {
		for _, p := range e.RejectedBy {
			want[p] = true
		}
		for _, p := range e.WaitingOn {
			want[p] = true
		}
		if len(want) == 0 {
			bad("parked key %v has no rejecting plugin", e.key)
		}
	}
	if len(e.slotList()) != len(want) {
		bad("parked key %v indexed under %d plugins, want %d", e.key, len(e.slotList()), len(want))
	}
	for _, s := range e.slotList() {
		if !want[s.b.plugin] || s.pos >= len(s.b.items) || s.b.items[s.pos] != e {
			bad("parked key %v: bad index slot for %q", e.key, s.b.plugin)
		}
	}
}

// checkIndex verifies that the plugin index holds parked entries only,
// as many as the parked entries' slots. O(n).
func (c *Core[K, T]) checkIndex(bad func(string, ...any)) {
	indexed := 0
	for name, b := range c.parked.buckets {
		for _, e := range b.items {
			if e.loc != locParked && e.loc != locGated {
				bad("index %q holds key %v at loc %d", name, e.key, e.loc)
			}
		}
		indexed += len(b.items)
	}
	slots := 0
	for _, e := range c.parked.all {
		slots += len(e.slotList())
	}
	if indexed != slots {
		bad("index holds %d entries, parked items have %d slots", indexed, slots)
	}
}

// checkKeys verifies the map: each key's entry, the priority cache, the
// shadows of re-added items, and that the map's queued and in-flight
// counts match the sub-queues' total, the counter and the in-flight list.
// O(n).
func (c *Core[K, T]) checkKeys(total int, bad func(string, ...any)) {
	queued, flying := 0, 0
	for key, e := range c.keys {
		if e.key != key {
			bad("map key %v holds key %v", key, e.key)
		}
		if e.kind == kindMember {
			if e.shadowOf() != nil {
				flying++
			}
			continue
		}
		if e.kind == kindLone && c.cfg.Priority != nil {
			c.checkPriority(e, bad)
			if s := e.shadowOf(); s != nil {
				c.checkPriority(s, bad)
			}
		}
		if e.loc == locFlight {
			flying++
			continue
		}
		queued++
		if s := e.shadowOf(); s != nil {
			flying++
			if s.loc != locFlight || s.key != key {
				bad("key %v: shadow is not in flight", key)
			}
		}
	}
	queued, flying = queued+c.groupEntities(), flying+c.groupFlights()
	if total != queued || total != c.queued {
		bad("sub-queues hold %d items, map has %d queued, counter %d", total, queued, c.queued)
	}
	if flying != c.flights.len() {
		bad("map has %d attempts in flight, list %d", flying, c.flights.len())
	}
}

// checkPluginCounts verifies the per-plugin counts of queued entities and
// that an entity is counted exactly when a plugin holds it. O(n).
func (c *Core[K, T]) checkPluginCounts(bad func(string, ...any)) {
	want := map[string]int{}
	for _, e := range c.queuedEntities() {
		if e.is(flagCounted) != e.held() {
			bad("key %v: counted %v, held %v", e.key, e.is(flagCounted), e.held())
		}
		e.plugins(func(p string) { want[p]++ })
	}
	if !maps.Equal(want, c.byPlugin) {
		bad("per-plugin counts %v, want %v", c.byPlugin, want)
	}
}

// checkFlights verifies the in-flight list (pop order, positions, no
// leading hole, the map's entries) and its event log (contiguous, and
// kept exactly while an attempt that may need it is in flight). O(n).
func (c *Core[K, T]) checkFlights(bad func(string, ...any)) {
	// Requeue skips the map for an attempt whose key nothing re-added.
	c.flights.each(func(e *entry[K, T], _ uint64, _ int) {
		if e.kind == kindLone && !e.is(flagReadded) && c.keys[e.key] != e {
			bad("key %v: in flight, not re-added, but not the map's entry", e.key)
		}
	})
	n, last := 0, uint64(0)
	c.flights.each(func(e *entry[K, T], seq uint64, i int) {
		n++
		if e.loc != locFlight || int(e.idx) != i || !c.flies(e) {
			bad("in-flight key %v: slot %d, records %d, or not in the map", e.key, i, e.idx)
		}
		if seq < last {
			bad("in-flight list out of pop order at key %v", e.key)
		}
		last = seq
	})
	if n != c.flights.len() || n > 0 && c.flights.slots[c.flights.first].e == nil {
		bad("in-flight list has %d entries, counted %d, or starts at a hole", n, c.flights.len())
	}
	for i := 1; i < len(c.flights.log); i++ {
		if c.flights.log[i].seq != c.flights.log[i-1].seq+1 {
			bad("in-flight event log not contiguous at %d", i)
		}
	}
	oldest, anyFlying := c.flights.oldestSeq()
	if !anyFlying && len(c.flights.log) > 0 {
		bad("%d in-flight events kept with nothing in flight", len(c.flights.log))
	}
	if anyFlying && len(c.flights.log) > 0 && c.flights.log[0].seq < oldest {
		bad("in-flight event %d kept, but the oldest attempt started at %d", c.flights.log[0].seq, oldest)
	}
}

// checkRoom verifies the budgets: each event's count of woken items
// equals the items (queued or in flight) that hold room in it, and so does
// each shared room's; a deferred item is parked, and the count of events
// it waits on is the count of live events that still hold it: those whose
// woken items hold room, or due a recheck, or dormant on a shared room
// (none of which has ended).
func (c *Core[K, T]) checkRoom(bad func(string, ...any)) {
	holding := map[*roomGroup[K, T]]int{}
	groups := map[*roomGroup[K, T]]bool{}
	byKey := map[string]int{}
	var deferred []*entry[K, T]
	each := func(e *entry[K, T]) {
		if g := e.tookFromGroup(); g != nil {
			holding[g]++
			groups[g] = true
			if g.key != "" {
				byKey[g.key]++
			}
		}
		if c.deferredCount(e) != 0 {
			deferred = append(deferred, e)
			if e.loc != locParked {
				bad("key %v deferred by %d events but at loc %d", e.key, c.deferredCount(e), e.loc)
			}
		}
	}
	for _, e := range c.keys {
		each(e)
		if e.shadowOf() != nil {
			each(e.shadowOf())
		}
	}
	for _, g := range c.rechecks {
		groups[g] = true
	}
	for _, rk := range c.rooms {
		for _, g := range rk.dormant {
			groups[g] = true
		}
	}
	waiting := map[*entry[K, T]]int{}
	for g := range groups {
		if g.woken != holding[g] {
			bad("budget of %s: %d woken items hold room, counted %d", g.label, holding[g], g.woken)
		}
		if g.ended {
			bad("budget of %s ended but still held", g.label)
		}
		g.eachDeferred(func(r deferRef[K, T]) {
			if g.waits(r.e) {
				waiting[r.e]++
			}
		})
	}
	for _, e := range deferred {
		if n := waiting[e]; n != c.deferredCount(e) {
			bad("key %v waits on the room of %d events, %d of them live", e.key, c.deferredCount(e), n)
		}
		delete(waiting, e)
	}
	for e, n := range waiting {
		bad("key %v held deferred by %d live events but counts none", e.key, n)
	}
	c.checkLazy(groups, bad)
	for key, rk := range c.rooms {
		if rk.woken != byKey[key] {
			bad("room %q: %d woken items hold room, counted %d", key, byKey[key], rk.woken)
		}
		for _, g := range rk.dormant {
			if !g.dormant || g.key != key {
				bad("room %q lists %s as dormant", key, g.label)
			}
		}
	}
}

// checkLazy verifies the deferrals by cohort (cohort_defer.go): a live
// group that defers cohorts is on each one's list, and only such groups
// are; a group that does not holds no item moved from them. Which items
// they defer is checked by checkRoom's counts.
func (c *Core[K, T]) checkLazy(live map[*roomGroup[K, T]]bool, bad func(string, ...any)) {
	for g := range live {
		checkCursor(g, bad)
		if !g.lazyTail && (len(g.lazy) > 0 || len(g.moved) > 0) {
			bad("budget of %s defers cohorts but not its tail by them", g.label)
		}
		for _, co := range g.lazy {
			if !slices.Contains(co.lazy, g) {
				bad("budget of %s defers a cohort that does not list it", g.label)
			}
		}
	}
	for _, co := range c.parked.byKey {
		for _, g := range co.lazy {
			if !live[g] || !slices.Contains(g.lazy, co) {
				bad("cohort of class %#x lists budget %s, ended or not deferring it", co.key.class, g.label)
			}
		}
	}
}

// checkPriority verifies a lone entry's cached priority against its item.
func (c *Core[K, T]) checkPriority(e *entry[K, T], bad func(string, ...any)) {
	if p := c.cfg.Priority(e.Item); e.prio != p {
		bad("key %v: cached priority %d, Priority says %d", e.key, e.prio, p)
	}
}
