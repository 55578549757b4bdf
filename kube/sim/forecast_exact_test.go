package sim

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// exactFork replays sc to at (keeping every nodeEvery-th of the trace's
// nodes), forks the state there, cuts the trace (nothing arrives after
// the fork, no pending pod is withdrawn), forecasts with the replay's
// own runtimes and replays on. It returns the state and a line for each
// pending pod whose forecast start or node differs from the replay's.
func exactFork(t *testing.T, sc *Scenario, at time.Duration, nodeEvery int) (*ForecastState, []string) {
	t.Helper()
	r, err := NewReplay(sc)
	if err != nil {
		t.Fatal(err)
	}
	r.s.x.traceKeep = os.Getenv("SCHEDQ_EXACT_KEEP") == "1"
	if nodeEvery > 1 {
		for i, name := range slices.Clone(r.s.cl.nodeGroups[traceGroup]) {
			if i%nodeEvery != 0 {
				r.s.removeNode(name)
			}
		}
	}
	if err := r.Until(at); err != nil {
		t.Fatal(err)
	}
	st := r.State()
	r.s.x.traceCut = true
	f, err := RunForecast(sc, st, ForecastOptions{Horizon: 720 * time.Hour, Known: r.Known})
	if err != nil {
		t.Fatal(err)
	}
	r.end = st.Now.Add(720 * time.Hour) // past the trace's last end: the pods still pending start
	if err := r.Until(at + 720*time.Hour); err != nil {
		t.Fatal(err)
	}
	var diff []string
	for i, p := range st.Pending {
		pf := f.Pods[i]
		actual, ok := r.Started(p.UID)
		node := ""
		if s := r.s.stats[p.UID]; s != nil {
			node = s.ext.node
		}
		if ok != pf.Starts || ok && (!pf.Start.Equal(actual) || pf.Node != node) {
			diff = append(diff, fmt.Sprintf("%s: forecast %v on %q (starts %v), replay %v on %q (starts %v)",
				p.Name, pf.Wait, pf.Node, pf.Starts, actual.Sub(st.Now), node, ok))
		}
	}
	return st, diff
}

// queueCensus counts the state's pending pods by where the queue held
// them, for a failure's message.
func queueCensus(st *ForecastState) string {
	var active, backoff, parked, again int
	for _, qp := range st.Queued {
		switch qp.Location {
		case schedq.InActive:
			active++
		case schedq.InBackoff:
			backoff++
		case schedq.InUnschedulable:
			parked++
		}
		if qp.UnschedulableCount+qp.ConsecutiveErrors > 1 {
			again++
		}
	}
	return fmt.Sprintf("%d pending (%d in activeQ, %d backing off, %d parked; %d failed more than once)", len(st.Pending), active, backoff, parked, again)
}

// With the trace cut at the fork, every pending pod starts in the
// forecast with the replay's runtimes exactly when and where the replay
// starts it, on every GPU model, at forks where the queue holds pods in
// activeQ, backing off and parked, each failed several times. Ten nodes
// have one GPU each, held by r0…r9 until 10 s, 20 s, … 100 s; twelve
// pods w00…w11 want a whole GPU. Without the wake budget every freed GPU
// wakes every waiting pod: one gets the GPU, the others fail again, and
// their backoffs grow (1 s, 2 s, 4 s, 8 s, 10 s). Queued as pods that had
// failed once or never, they would be tried sooner than the replay tries
// them, and a pod backing off would be tried at once, where a freed GPU
// goes to whichever pod is tried first.
func TestForecastOfRetriedPodsMatchesTheReplay(t *testing.T) {
	pods, nodes := timedHeader, "sn,cpu_milli,memory_mib,gpu,model\n"
	for k := range 10 {
		nodes += fmt.Sprintf("n%d,64000,262144,1,T4\n", k)
		pods += fmt.Sprintf("r%d,1000,1024,1,1000,,LS,Running,0,%d,0\n", k, 10*(k+1))
	}
	for i := range 12 {
		pods += fmt.Sprintf("w%02d,1000,1024,1,1000,,LS,Running,%d,5000,%d\n", i, i+1, i+1)
	}
	dir := writeTrace(t, nodes, pods)
	for _, model := range []string{GPUModelDevice, GPUModelCapacity, GPUModelDRA} {
		t.Run(model, func(t *testing.T) {
			var backoff, again int // forks with pods backing off, with pods parked after failing again
			for at := 40 * time.Second; at < 100*time.Second; at += time.Second {
				sc := traceScenario(dir)
				off, maxBackoff := false, time.Minute
				sc.Scheduler.GPUModel, sc.Scheduler.AttemptCost = model, 500*time.Millisecond
				sc.Queue.WakeBudget, sc.Queue.PopFromBackoff, sc.Queue.MaxBackoff = &off, &off, &maxBackoff
				st, diff := exactFork(t, sc, at, 1)
				b, a := retried(st)
				backoff, again = backoff+min(b, 1), again+min(a, 1)
				if len(diff) > 0 {
					t.Errorf("fork at %v, %s: %d start otherwise in the forecast than in the replay:\n%s", at, queueCensus(st), len(diff), strings.Join(diff, "\n"))
				}
			}
			if backoff == 0 || again == 0 {
				t.Errorf("%d forks with pods backing off, %d with pods parked after several failures; want some of each", backoff, again)
			}
		})
	}
}

// retried counts the state's pods backing off, and those parked after
// more than one failure.
func retried(st *ForecastState) (backoff, again int) {
	for _, qp := range st.Queued {
		switch {
		case qp.Location == schedq.InBackoff:
			backoff++
		case qp.Location == schedq.InUnschedulable && qp.UnschedulableCount > 1:
			again++
		}
	}
	return backoff, again
}

// On the Alibaba GPU trace at the evaluation's load, with the trace cut
// at each hourly fork, every pending pod starts in the forecast with the
// trace's true runtimes exactly when and where the replay starts it.
// It runs only when SCHEDQ_FORECAST_EVAL names the trace's directory;
// SCHEDQ_EXACT_FORKS sets how many forks (default 3),
// SCHEDQ_EXACT_MODELS the GPU models (default all three, comma-separated),
// SCHEDQ_FORECAST_FROM and SCHEDQ_FORECAST_EVERY the split and the
// forks' interval, as for TestForecastAccuracy, and SCHEDQ_EXACT_KEEP=1
// has the replay withdraw no pending pod before the fork either.
func TestForecastExactOnTheTrace(t *testing.T) {
	dir := os.Getenv("SCHEDQ_FORECAST_EVAL")
	if dir == "" {
		t.Skip("set SCHEDQ_FORECAST_EVAL to the Alibaba GPU trace's directory")
	}
	forks := 3
	if v := os.Getenv("SCHEDQ_EXACT_FORKS"); v != "" {
		fmt.Sscan(v, &forks)
	}
	models := []string{GPUModelDevice, GPUModelCapacity, GPUModelDRA}
	if v := os.Getenv("SCHEDQ_EXACT_MODELS"); v != "" {
		models = strings.Split(v, ",")
	}
	from, err := evalFrom(dir, os.Getenv("SCHEDQ_FORECAST_FROM"))
	if err != nil {
		t.Fatal(err)
	}
	every := time.Hour
	if v := os.Getenv("SCHEDQ_FORECAST_EVERY"); v != "" {
		if every, err = time.ParseDuration(v); err != nil || every <= 0 {
			t.Fatalf("SCHEDQ_FORECAST_EVERY: %q is not a positive duration", v)
		}
	}
	for _, model := range models {
		for k := 1; k <= forks; k++ {
			t.Run(fmt.Sprintf("%s/%v", model, time.Duration(k)*every), func(t *testing.T) {
				sc := &Scenario{Name: "forecast-exact", Seed: 1, Trace: &TraceSpec{Format: TraceAlibabaGPU, Dir: dir, Speed: 1000, from: int64(from / time.Second)}}
				sc.Scheduler.GPUModel = model
				st, diff := exactFork(t, sc, time.Duration(k)*every, 10)
				t.Logf("%s, %d running, %d nodes: %d differ", queueCensus(st), len(st.Running), len(st.Nodes), len(diff))
				if len(diff) > 0 {
					t.Errorf("%d of %d pending pods start otherwise in the forecast than in the replay:\n%s", len(diff), len(st.Pending), strings.Join(diff[:min(len(diff), 20)], "\n"))
				}
			})
		}
	}
}

// A pending pod the state's queue does not list (in flight at the copy)
// goes first among its equals, and the pods the queue lists go in the
// order of their queue timestamps: with room for one of b and c when a
// ends, c, unlisted, gets it although b was queued an hour before the
// state; listed both, the one queued earlier gets it, listed first or
// not. Stamped with the state's instant, as until 2026-11-29, b would
// have gone first each time.
func TestForecastQueuesUnlistedPodsFirst(t *testing.T) {
	tests := []struct {
		name   string
		queued map[string]time.Duration // queue timestamps before the state's instant
		first  string
	}{
		{"unlisted first", map[string]time.Duration{"b": time.Hour}, "c"},
		{"by timestamp", map[string]time.Duration{"b": time.Minute, "c": time.Hour}, "c"},
		{"by timestamp, listed first", map[string]time.Duration{"b": time.Hour, "c": time.Minute}, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := testState()
			st.Pending = []*v1.Pod{testPod("b", "", "4", "30m"), testPod("c", "", "4", "30m")}
			st.Queued = map[types.UID]QueuedPod{}
			for name, ago := range tc.queued {
				st.Queued[types.UID("u-"+name)] = QueuedPod{Location: schedq.InActive, Status: schedq.Status{Timestamp: st.Now.Add(-ago)}}
			}
			f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: 3 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			p, _ := f.Of(types.NamespacedName{Namespace: "default", Name: tc.first})
			if !p.Starts || p.Wait > 50*time.Minute+time.Second {
				t.Errorf("%s: %+v; want it first, when a ends in 50 min", tc.first, p)
			}
		})
	}
}
