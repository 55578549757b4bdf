package app

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/sim"
)

// forecastResult is what one forecast run returned.
type forecastResult struct {
	lf  *liveForecast
	err error
}

// startForecast runs f.compute in its own goroutine.
func startForecast(f *forecaster) <-chan forecastResult {
	done := make(chan forecastResult, 1)
	go func() {
		lf, err := f.compute()
		done <- forecastResult{lf, err}
	}()
	return done
}

// A forecast in a running scheduler waits while the real queue has a pod
// ready to try, and goes on once the scheduler has taken it; what it
// predicts does not change.
func TestForecastYieldsToScheduling(t *testing.T) {
	synctest.Test(t, testForecastYieldsToScheduling)
}

func testForecastYieldsToScheduling(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.running(l.pod("r", "4", "1h"), "n0", time.Minute)
	l.pending(l.pod("p", "1", "10m"))
	f := l.forecaster()
	f.busy = func() bool { return l.queue.Counts().Active > 0 }
	f.stop = make(chan struct{})

	done := startForecast(f)
	waitsOnClock(t, l.clk.HasWaiters) // p is ready to try: the forecast waits
	l.clk.Step(paceRecheck)
	waitsOnClock(t, l.clk.HasWaiters) // still ready: it waits again
	select {
	case r := <-done:
		t.Fatalf("the forecast ended while the scheduler had a pod to try: %+v", r)
	default:
	}
	if _, err := l.queue.Pop(context.Background()); err != nil { // the scheduler takes p
		t.Fatal(err)
	}
	l.clk.Step(paceRecheck)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.lf.Waited != 2*paceRecheck {
		t.Errorf("waited %v, want %v", r.lf.Waited, 2*paceRecheck)
	}
	pf, err := r.lf.F.Of(types.NamespacedName{Namespace: "default", Name: "p"})
	if err != nil || !pf.Starts || !about(pf.Wait, 59*time.Minute) {
		t.Errorf("p: %+v %v, want a start when r ends, in 59m", pf, err)
	}
}

// TestForecastStopsWaitingAtShutdown: a forecast waiting for a busy
// scheduler ends when the scheduler stops, rather than waiting for ever,
// and so does one started after it stopped, before it copies the state:
// with errForecastStopped, not a forecast. The first ran on to the end,
// copying the live state run was closing.
func TestForecastStopsWaitingAtShutdown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stopFirst bool // stop before the forecast starts
	}{
		{name: "waiting for a busy scheduler"},
		{name: "started after the stop", stopFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLiveCluster(t, 1)
				l.pending(l.pod("p", "1", "10m"))
				f := l.forecaster()
				f.busy = func() bool { return true }
				stop := make(chan struct{})
				f.stop = stop
				copies := 0
				state := f.state
				f.state = func() (*sim.ForecastState, CopyStats) { copies++; return state() }
				if tc.stopFirst {
					close(stop)
				}
				done := startForecast(f)
				if !tc.stopFirst {
					waitsOnClock(t, l.clk.HasWaiters)
					close(stop)
				}
				r := <-done
				if !errors.Is(r.err, errForecastStopped) || r.lf != nil {
					t.Errorf("after shutdown: %+v, %v; want %v", r.lf, r.err, errForecastStopped)
				}
				if copies != 0 {
					t.Errorf("the state was copied %d times after the stop, want none", copies)
				}
			})
		})
	}
}

// waitsOnClock waits, in a synctest bubble, until every goroutine of the
// bubble is blocked, then fails unless one waits on the fake clock
// (waiting, its HasWaiters): a wait with no polling.
func waitsOnClock(t *testing.T, waiting func() bool) {
	t.Helper()
	synctest.Wait()
	if !waiting() {
		t.Fatal("every goroutine is blocked, and none waits on the clock")
	}
}
