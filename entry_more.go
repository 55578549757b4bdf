package schedq

// entryMore is the part of an entry that only parked items, re-added
// keys and the optional features use: the plugin-index slots and the
// last leftover flush of a parked item, the attempt a re-added key's
// entry shadows, the wake budget's links (Config.Budget) and the
// fairness link (Config.Fairness). An entry allocates it when it first needs it and
// keeps it when recycled, so a queue whose items are only ever active
// or backing off never allocates it, and the steady state allocates
// nothing either way. Keeping it out of line keeps a pod's entry in the
// 320-byte size class.
type entryMore[K comparable, T any] struct {
	slots []slot[K, T] // the index slots of a parked item (parked.go)
	// coh is a parked lone item's cohort, cpos its place in it
	// (parked_cohort.go).
	coh  *cohort[K, T]
	cpos int32
	// opos is its record's place in its cohort's order (cohort_order.go).
	opos int32
	// joined is parked.seq when it joined its cohort: the groups made
	// after it that defer the cohort lazily defer it (cohortDefer).
	joined uint64
	// Budgets: the group whose room it holds, from its wake to the end of
	// its next attempt. While parked, how many events that have not ended
	// deferred it one by one, and the last of them (for Explain; it may
	// have ended since); its cohort's records add those that deferred it
	// with its cohort (lazyDefer). The groups keep the items they
	// deferred (deferRef), not the reverse: an item may wait on the room
	// of many events, and each event's end costs O(1) per item.
	// clearedAt is parked.seq when its deferrals were last cleared (or
	// the entry recycled): a group made before then no longer holds it.
	tookFrom     *roomGroup[K, T]
	lastDeferrer *roomGroup[K, T]
	clearedAt    uint64
	deferCount   int32
	fair         fairLink[K, T] // its tenant, under Config.Fairness
	// shadow is, for a queued entry, an attempt in flight for the same
	// key (re-added during it); rare, so out of line (entry.shadowOf).
	shadow *entry[K, T]
	// lastFlush is, while parked, the last leftover flush that tried it,
	// or the last budget that deferred it (Unix ns), noted at flushSeq
	// (parked.seq then); its cohort's record, if newer, overrides it
	// (cohortFlush).
	lastFlush int64
	flushSeq  uint64
	// stratSeq is parked.seq when a move request set its strategy; its
	// cohort's, if newer, overrides it (strategyOf).
	stratSeq uint64
}

// ext returns e's entryMore, allocating it on first use. O(1).
func (e *entry[K, T]) ext() *entryMore[K, T] {
	if e.more == nil {
		e.more = &entryMore[K, T]{}
	}
	return e.more
}

// slotList returns e's index slots: none if it never needed any.
func (e *entry[K, T]) slotList() []slot[K, T] {
	if e.more == nil {
		return nil
	}
	return e.more.slots
}

// fairOf returns e's fairness link, zero if it has none.
func (e *entry[K, T]) fairOf() fairLink[K, T] {
	if e.more == nil {
		return fairLink[K, T]{}
	}
	return e.more.fair
}

// tookFromGroup returns the budget group whose room e holds, or nil.
func (e *entry[K, T]) tookFromGroup() *roomGroup[K, T] {
	if e.more == nil {
		return nil
	}
	return e.more.tookFrom
}

// shadowOf returns the attempt in flight that queued entry e shadows (its
// key's older attempt), or nil. O(1).
func (e *entry[K, T]) shadowOf() *entry[K, T] {
	if !e.is(flagShadow) {
		return nil
	}
	return e.more.shadow
}

// setShadow makes f the attempt that e shadows (nil: none). O(1).
func (e *entry[K, T]) setShadow(f *entry[K, T]) {
	if f == nil {
		if e.is(flagShadow) {
			e.more.shadow = nil
			e.set(flagShadow, false)
		}
		return
	}
	e.ext().shadow = f
	e.set(flagShadow, true)
}

// clearDeferred forgets the budget groups that deferred e: their refs
// to it go stale. e is out of its cohort, or about to leave it, so its
// cohort's lazy deferrals no longer count it either. O(1).
func (c *Core[K, T]) clearDeferred(e *entry[K, T]) {
	if m := e.more; m != nil {
		m.deferCount, m.lastDeferrer = 0, nil
		m.clearedAt = c.parked.seq
	}
}
