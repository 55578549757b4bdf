package app

import (
	"errors"
	"time"
)

// A forecast of a large cluster can run for tens of seconds of CPU. In a
// running scheduler it is background work: it yields the CPU to
// scheduling. paceEvery is how many operations of a forecast's virtual
// run go between two looks at the live queue; paceRecheck is how long the
// forecast waits, while the scheduler has pods to try, before it looks
// again.
const (
	paceEvery   = 64
	paceRecheck = 10 * time.Millisecond
)

// pace returns the pace of one forecast (sim.ForecastOptions.Pace), or
// nil if f has neither a busy signal nor a stop. compute calls it once
// before it copies the state, and the run before each object it builds
// and each operation. On the first call and every paceEvery-th after it,
// the pace looks at f.stop and, with f.busy, asks it (one Counts of the
// queue: O(1) under its lock) and, while the scheduler has a pod ready to
// try, waits paceRecheck on f.timers and asks again. Once f.stop is
// closed it ends the forecast (it panics with forecastStopped, which
// compute recovers), waiting or not: a forecast under way at shutdown
// ends at its next look, rather than running on, reading the queue and
// the frameworks run is closing. The wait it adds up is kept in *waited.
// Not safe for concurrent use: one per forecast.
func (f *forecaster) pace(waited *time.Duration) func() {
	if f.busy == nil && f.stop == nil {
		return nil
	}
	n := 0
	return func() {
		n++
		if (n-1)%paceEvery != 0 {
			return
		}
		select {
		case <-f.stop:
			panic(forecastStopped{})
		default:
		}
		for f.busy != nil && f.busy() {
			start := f.clock.Now()
			t := f.timers.NewTimer(paceRecheck)
			select {
			case <-t.C():
			case <-f.stop:
				t.Stop()
				panic(forecastStopped{})
			}
			*waited += f.clock.Since(start)
		}
	}
}

// forecastStopped is the pace's panic when f.stop is closed: compute
// recovers it into errForecastStopped.
type forecastStopped struct{}

// errForecastStopped is the error of a forecast ended, or not started,
// because the scheduler is shutting down.
var errForecastStopped = errors.New("forecast: the scheduler is shutting down")
