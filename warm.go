package schedq

// warm loads one word from each part of e that moving it between
// sub-queues reads, and returns them summed so that the loads are kept.
// A caller that warms several entries in a row, before it works on them,
// has their cache misses overlap rather than wait one after another:
// with many items queued, an entry is seldom in the cache. O(1).
func (e *entry[K, T]) warm() uint64 {
	return uint64(e.loc) + uint64(e.Status.InitialAttemptTimestamp.Nanosecond()) +
		uint64(len(e.UnschedulablePlugins)) + uint64(len(e.GatingPlugin)) +
		uint64(e.entered) + uint64(e.gen)
}
