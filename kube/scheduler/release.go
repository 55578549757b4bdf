package scheduler

// Release detaches the scheduler from its framework, which outlives it:
// a leader builds a scheduler per term on one framework, and New and
// EnablePreemption point the framework's nominator, its pod activator and
// DefaultPreemption's hooks at the scheduler and its queue (and
// EnableGangRelease points the cache at its gang release state).
// Released, the framework gets an empty nominator, an activator that
// activates nothing and the plugin its own hooks back, so that neither keeps the scheduler,
// its queue and its last cycle's state alive while the process waits on
// standby for the next term. Call it once the term has ended (after
// Wait); the scheduler must not schedule again. O(1). Not safe to call
// while a cycle runs on the framework.
func (s *Scheduler) Release() {
	if s.release != nil {
		s.cache.release.CompareAndSwap(s.release, nil)
	}
	for _, p := range s.profs {
		p.fw.Framework().SetPodNominator(&fwNominator{})
		p.fw.Framework().SetPodActivator(noActivator{})
		if f := p.pre; f != nil {
			f.own.restore(f.pl)
			p.pre = nil
		}
	}
}
