package schedq

// entryMore is the part of an entry that only parked items and the
// optional features use: the plugin-index slots of a parked item, the
// wake budget's links (Config.Budget) and the fairness link
// (Config.Fairness). An entry allocates it when it first needs it and
// keeps it when recycled, so a queue whose items are only ever active
// or backing off never allocates it, and the steady state allocates
// nothing either way. Keeping it out of line keeps a pod's entry in the
// 384-byte size class.
type entryMore[K comparable, T any] struct {
	slots []slot[K, T] // the index slots of a parked item (parked.go)
	// Budgets: the group whose room it holds, from its wake to the end of
	// its next attempt; the groups that deferred it, while parked.
	tookFrom *roomGroup[K, T]
	deferred deferrals[K, T]
	fair     fairLink[K, T] // its tenant and live slot, under Config.Fairness
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

// deferredFirst returns the first budget group that deferred e, or nil.
func (e *entry[K, T]) deferredFirst() *roomGroup[K, T] {
	if e.more == nil {
		return nil
	}
	return e.more.deferred.first
}

// deferredAll returns the budget groups that deferred e.
func (e *entry[K, T]) deferredAll() []*roomGroup[K, T] {
	if e.more == nil {
		return nil
	}
	return e.more.deferred.all()
}

// clearDeferred forgets the budget groups that deferred e.
func (e *entry[K, T]) clearDeferred() {
	if e.more != nil {
		e.more.deferred.clear()
	}
}
