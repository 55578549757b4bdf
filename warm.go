package schedq

// warm loads one word from each cache line of e that moving it between
// sub-queues reads (the first four of its five), and returns them summed
// so that the loads are kept. A caller that warms several entries in a
// row, before it works on them, has their cache misses overlap rather
// than wait one after another: with many items queued, an entry is seldom
// in the cache. O(1).
func (e *entry[K, T]) warm() uint64 {
	return uint64(e.loc) + uint64(e.Status.InitialAttemptTimestamp.Nanosecond()) +
		uint64(len(e.RejectedBy)) + uint64(len(e.GatedBy))
}

// warmAll is warm and the last cache line too, the key's, which a pop
// reads. O(1).
func (e *entry[K, T]) warmAll() uint64 {
	return e.warm() + uint64(e.Cycle)
}
