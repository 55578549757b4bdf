package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq/kube/sim"
)

// Forecast defaults: how far a live forecast looks ahead, and how long one
// forecast serves every request before the next asks for a new one.
const (
	DefaultForecastHorizon = 24 * time.Hour
	DefaultForecastTTL     = 10 * time.Second
	// forecastWait is how long a request waits for a forecast under way
	// before it is answered with the last one (or told it is under way).
	forecastWait = 5 * time.Second
	// forecastStopWait is how long run's shutdown waits for a forecast
	// under way to end (forecaster.wait).
	forecastStopWait = 5 * time.Second
)

// errUnderWay answers a request that waited for the first forecast in
// vain: 503, on every endpoint.
var errUnderWay = errors.New("forecast: the first forecast is under way; ask again in a moment")

// forecaster runs forecasts of the live state and shares one between the
// requests of a TTL: listing every pending pod with its predicted start
// runs one forecast, not one per pod. One forecast runs at a time, in the
// background; a request waits for it a bounded time (see get). Safe for
// concurrent use.
type forecaster struct {
	state func() (*sim.ForecastState, CopyStats)
	sc    *sim.Scenario
	o     sim.ForecastOptions
	ttl   time.Duration
	clock clock.PassiveClock
	// schedulerName is the live scheduler's: what-if pods naming it are
	// the simulated scheduler's.
	schedulerName string
	// profiles are liveState.profiles: what-if pods may name any of them.
	profiles []string
	// hist, if set, estimates the runtimes of pods that declare none.
	hist *liveHistory
	// busy, if set, says whether the scheduler has a pod ready to try: a
	// forecast waits while it has (see pace), until stop is closed.
	busy func() bool
	stop <-chan struct{}

	// wait is how long a request waits for a forecast under way, on
	// timers.
	wait   time.Duration
	timers clock.Clock

	// mu guards the fields below. A leaf: nothing is called while it
	// is held (the copy and the run happen outside it).
	mu      sync.Mutex
	last    *liveForecast
	err     error         // of the latest run
	running chan struct{} // closed when the run under way ends; nil if none
}

// liveForecast is one forecast with the state it ran from.
type liveForecast struct {
	F    *sim.Forecast
	St   *sim.ForecastState
	Copy CopyStats
	// Took is how long the forecast took, the copy aside, and Waited how
	// much of it the forecast spent waiting for the scheduler (see pace),
	// before the copy and during the run.
	Took, Waited time.Duration
	// O are the options it ran with (its history and its base included:
	// the what-ifs of St start from that base).
	O sim.ForecastOptions
}

// newForecaster forecasts from l's copies with the scheduler's settings,
// over DefaultForecastHorizon, one forecast per DefaultForecastTTL, with
// the runtimes its history learns (feed it: hist.handler()).
func newForecaster(o Options, l *liveState, timers clock.Clock) *forecaster {
	return &forecaster{state: l.copy, sc: scenarioOf(o), o: sim.ForecastOptions{Horizon: DefaultForecastHorizon},
		ttl: DefaultForecastTTL, wait: forecastWait, timers: timers, clock: l.clock, schedulerName: l.schedulerName, profiles: l.profiles,
		hist: &liveHistory{schedulerName: l.schedulerName, profiles: l.profiles, clock: l.clock, opts: o.History}}
}

// scenarioOf is the simulator's scheduler set up as the live one: the same
// plugins (kube-scheduler's with the --config profiles), percentage of
// nodes to score, backoff, wake budget and
// fairness, with gangs, gang release and preemption on (the simulator
// turns gang release on itself, as run's terms do).
func scenarioOf(o Options) *sim.Scenario {
	sc := &sim.Scenario{Name: "live", Seed: 1}
	sc.Scheduler.Plugins, sc.Scheduler.Config = sim.PluginsUpstream, o.Config.File
	sc.Scheduler.Profile = o.Config.Profile // as loaded at the start: the file may have changed since
	if profs := o.profiles(); len(profs) > 1 {
		// Every profile, each scheduling its own pods, which the
		// forecasts keep under their names (liveState.profiles).
		sc.Scheduler.Profile, sc.Scheduler.Profiles = nil, profs
	}
	sc.Scheduler.PercentageOfNodesToScore = o.PercentageOfNodesToScore
	sc.Scheduler.Preemption = &sim.PreemptionSpec{PodGracePeriods: true}
	sc.Queue.InitialBackoff = o.Config.InitialBackoff
	if o.Config.MaxBackoff > 0 {
		mb := o.Config.MaxBackoff
		sc.Queue.MaxBackoff = &mb
	}
	wake := !o.NoWakeBudget
	sc.Queue.WakeBudget = &wake
	if o.Fairness.Namespaces {
		sc.Queue.Fairness, sc.Queue.FairnessWeights, sc.Queue.FairnessHalfLife = true, o.Fairness.Weights, o.Fairness.HalfLife
	}
	return sc
}

// get returns the last forecast if it is younger than the TTL. Otherwise
// it starts a new one from a fresh copy of the state, unless one is under
// way, and waits for it at most f.wait: a forecast of a large cluster can
// take longer than a request should, so after the wait the request gets
// the last forecast, older than the TTL (its At says when it was taken),
// or, before the first one, an error saying that it is under way. An
// error of the latest run (no nodes, a failed run) is returned until a
// run succeeds. One run at a time, in its own goroutine. The wait ends
// too when ctx is done (the client of the request went away), with
// ctx's error; the run goes on, for the requests after it.
func (f *forecaster) get(ctx context.Context) (*liveForecast, error) {
	f.mu.Lock()
	if f.last != nil && f.clock.Since(f.last.F.At) < f.ttl {
		defer f.mu.Unlock()
		return f.last, nil
	}
	if f.running == nil {
		if f.stopped() {
			// No run starts once the scheduler stops: waitRun counts on it.
			defer f.mu.Unlock()
			return nil, errForecastStopped
		}
		f.running = make(chan struct{})
		go f.run(f.running)
	}
	done := f.running
	f.mu.Unlock()
	t := f.timers.NewTimer(f.wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.running == done && f.last == nil:
		return nil, errUnderWay
	case f.running == done:
		return f.last, nil // the last one, older than the TTL
	case f.err != nil:
		return nil, f.err
	}
	return f.last, nil
}

// stopped reports whether f.stop is closed.
func (f *forecaster) stopped() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

// waitRun waits for the forecast under way, if any, at most d on f.timers,
// and reports whether none is left. Call it once f.stop is closed: the
// run then ends at its pace's next look (see pace), and no other starts
// (see get). run's shutdown calls it, so that no forecast reads the
// queue, the cache or the frameworks after run returns.
func (f *forecaster) waitRun(d time.Duration) bool {
	f.mu.Lock()
	done := f.running
	f.mu.Unlock()
	if done == nil {
		return true
	}
	t := f.timers.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C():
		return false
	}
}

// run makes one forecast and publishes it (or its error), then closes
// done, its last step. A panic in the run fails the forecast, not the
// process.
func (f *forecaster) run(done chan struct{}) {
	var lf *liveForecast
	var err error
	defer func() {
		if r := recover(); r != nil {
			lf, err = nil, fmt.Errorf("forecast: the run panicked: %v", r)
		}
		f.mu.Lock()
		if err == nil {
			f.last = lf
		}
		f.err, f.running = err, nil
		f.mu.Unlock()
		close(done)
	}()
	lf, err = f.compute()
}

// compute copies the state and runs the forecast. Once f.stop is closed
// it ends at its pace's next look, before the copy or during the run,
// with errForecastStopped.
func (f *forecaster) compute() (_ *liveForecast, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(forecastStopped); !ok {
				panic(r)
			}
			err = errForecastStopped
		}
	}()
	if f.stopped() {
		return nil, errForecastStopped
	}
	t := f.clock.Now()
	var waited time.Duration
	pace := f.pace(&waited)
	if pace != nil {
		pace() // the copy, too, waits while the scheduler is busy
	}
	st, cs := f.state()
	if len(st.Nodes) == 0 {
		return nil, fmt.Errorf("no forecast: %w", sim.ErrNoNodes)
	}
	o := f.o
	if f.hist != nil {
		running := make(map[types.UID]bool, len(st.Running))
		for _, rp := range st.Running {
			running[rp.Pod.UID] = true
		}
		o.History = f.hist.historyOf(running)
	}
	// The cluster is built once, for the forecast and the what-ifs asked
	// of its state after it (whatIf), which start from it.
	b, err := sim.NewForecastBase(st)
	if err != nil {
		return nil, fmt.Errorf("forecast: %w", err)
	}
	o.Base, o.Pace = b, pace
	fc, err := sim.RunForecast(f.sc, st, o)
	if err != nil {
		return nil, fmt.Errorf("forecast: %w", err)
	}
	o.Pace = nil // a what-if from this forecast is not paced
	took := f.clock.Since(t) - cs.Took
	return &liveForecast{F: fc, St: st, Copy: cs, Took: took, Waited: waited, O: o}, nil
}

// Prediction is one pending pod's predicted start, with its basis.
type Prediction struct {
	sim.PodForecast
	// At is when the state was copied; Horizon how far the forecast looked.
	At      time.Time     `json:"at"`
	Horizon time.Duration `json:"horizon"`
	// Arrivals says what the forecast assumes of pods not yet created.
	Arrivals string `json:"arrivals"`
	// Copy says how the state was copied, with the longest lock holds.
	Copy CopyStats `json:"copy"`
}

// of returns key's prediction, or an error naming why there is none: the
// pod is not pending, or it arrived after the last forecast.
func (lf *liveForecast) of(key types.NamespacedName) (*Prediction, error) {
	pf, err := lf.F.Of(key)
	if err != nil {
		return nil, err
	}
	return &Prediction{PodForecast: pf, At: lf.F.At, Horizon: lf.F.Horizon, Arrivals: lf.F.Arrivals, Copy: lf.Copy}, nil
}

// String says the prediction in one line, with its basis.
func (p *Prediction) String() string {
	var s string
	switch {
	case p.Starts && p.Gang != "":
		s = fmt.Sprintf("predicted start: %s (in %v), gang %s starts together", p.Start.UTC().Format(time.RFC3339), p.Wait.Round(time.Second), p.Gang)
	case p.Starts:
		s = fmt.Sprintf("predicted start: %s (in %v) on %s", p.Start.UTC().Format(time.RFC3339), p.Wait.Round(time.Second), p.Node)
	default:
		s = fmt.Sprintf("predicted start: not within the horizon of %v", p.Horizon)
	}
	s += "; basis: " + basisText(p.Basis)
	if p.Unknown > 0 {
		s += fmt.Sprintf("; %d running pods have no runtime estimate and are taken to run until unknown (the pod may start earlier if they end)", p.Unknown)
	}
	return s + "; new arrivals: " + p.Arrivals
}

func basisText(b []sim.SourceCount) string {
	if len(b) == 0 {
		return "no estimated end needed"
	}
	s := ""
	for i, c := range b {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d ends by %s", c.Count, c.Source)
	}
	return s
}
