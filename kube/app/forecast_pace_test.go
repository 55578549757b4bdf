package app

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
	l := newLiveCluster(t, 1)
	l.running(l.pod("r", "4", "1h"), "n0", time.Minute)
	l.pending(l.pod("p", "1", "10m"))
	f := l.forecaster()
	f.busy = func() bool { return l.queue.Counts().Active > 0 }
	f.stop = make(chan struct{})

	done := startForecast(f)
	waitFor(t, l.clk.HasWaiters) // p is ready to try: the forecast waits
	l.clk.Step(paceRecheck)
	waitFor(t, l.clk.HasWaiters) // still ready: it waits again
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

// A forecast waiting for a busy scheduler ends when the scheduler stops,
// rather than waiting for ever.
func TestForecastStopsWaitingAtShutdown(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.pending(l.pod("p", "1", "10m"))
	f := l.forecaster()
	f.busy = func() bool { return true }
	stop := make(chan struct{})
	f.stop = stop

	done := startForecast(f)
	waitFor(t, l.clk.HasWaiters)
	close(stop)
	r := <-done
	if r.err != nil || r.lf.Waited != 0 {
		t.Fatalf("after shutdown: %v, waited %v; want the forecast, no wait", r.err, r.lf)
	}
	if pf, err := r.lf.F.Of(types.NamespacedName{Namespace: "default", Name: "p"}); err != nil || !pf.Starts {
		t.Errorf("p: %+v %v, want a start", pf, err)
	}
}
