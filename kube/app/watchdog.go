package app

import (
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// DefaultStallTimeout is how long one scheduling cycle may run before the
// scheduler calls itself stuck (see Options.StallTimeout). A cycle waits
// at most for a binding slot (each binding times out after 30s) and for
// its status patch (10s), so a healthy cycle stays well below it.
const DefaultStallTimeout = 2 * time.Minute

// MinStallTimeout is the least StallTimeout accepted: above the 40s a
// healthy cycle may wait (a binding slot, then its status patch), so
// that no healthy leader is restarted as stuck.
const MinStallTimeout = time.Minute

// loopWatch tells whether the scheduling loop has stopped making progress
// while it has work: a popped pod whose cycle has run for longer than
// bound. The loop calls begin after each Pop and end when the cycle
// returns; live reads one atomic and never waits for a lock the loop
// could hold, so a stuck loop cannot hang the probe. Safe for concurrent
// use.
type loopWatch struct {
	clock clock.PassiveClock
	bound time.Duration
	since atomic.Int64 // UnixNano when the running cycle began; 0: none
}

func newLoopWatch(c clock.PassiveClock, bound time.Duration) *loopWatch {
	if bound <= 0 {
		bound = DefaultStallTimeout
	}
	return &loopWatch{clock: c, bound: bound}
}

// begin records that a cycle started now.
func (w *loopWatch) begin() { w.since.Store(max(w.clock.Now().UnixNano(), 1)) }

// end records that the cycle returned.
func (w *loopWatch) end() { w.since.Store(0) }

// live reports whether the loop is making progress: false, with why, if
// the running cycle began more than bound ago. O(1).
func (w *loopWatch) live() (bool, string) {
	s := w.since.Load()
	if s == 0 {
		return true, "ok"
	}
	if d := w.clock.Since(time.Unix(0, s)); d > w.bound {
		return false, fmt.Sprintf("scheduling loop stuck: a cycle has run for %v, more than %v", d.Round(time.Second), w.bound)
	}
	return true, "ok"
}
