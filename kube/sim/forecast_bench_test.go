package sim

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// benchState is a full cluster of nodes 8-core nodes, each running four
// 2-core pods that end within two hours, and pending 2-core pods that
// each declare a runtime of 10 to 70 minutes.
func benchState(nodes, pending int) *ForecastState {
	now := epoch.Add(time.Hour)
	st := &ForecastState{Now: now,
		Nodes: newCluster().makeNodes(NodeGroup{Name: "n", Count: nodes, Capacity: map[string]string{"cpu": "8", "memory": "32Gi"}})}
	for i := range nodes * 4 {
		p := testPod(fmt.Sprintf("r-%d", i), fmt.Sprintf("n-%d", i/4), "2", fmt.Sprintf("%dm", 30+i%91))
		st.Running = append(st.Running, RunningPod{Pod: p, Started: now.Add(-time.Duration(i%29) * time.Minute)})
	}
	for i := range pending {
		st.Pending = append(st.Pending, testPod(fmt.Sprintf("p-%d", i), "", "2", fmt.Sprintf("%dm", 10+i%61)))
	}
	return st
}

// BenchmarkForecast forecasts every pending pod: 10,000 pending on 1,500
// nodes (the goal is under 2 s per forecast, see docs/forecast.md).
// BenchmarkForecastFifth is the same at a fifth of the size: 2,000
// pending on 300 nodes. Both run the default plugins (kube-scheduler's
// framework).
// Each checks, after its runs, that its forecast is the one pinned in
// benchDigests: a change made to make it faster must not change it.
func BenchmarkForecast(b *testing.B)      { benchForecast(b, "", 1500, 10_000) }
func BenchmarkForecastFifth(b *testing.B) { benchForecast(b, "", 300, 2000) }

func benchForecast(b *testing.B, plugins string, nodes, pending int) {
	st := benchState(nodes, pending)
	sc := &Scenario{Name: "bench", Seed: 1}
	sc.Scheduler.Plugins = plugins
	cpu := startCPU(b)
	var f *Forecast
	for b.Loop() {
		var err error
		f, err = RunForecast(sc, st, ForecastOptions{Horizon: 24 * time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		if !f.Pods[len(f.Pods)-1].Starts {
			b.Fatal("the last pod does not start within the horizon")
		}
	}
	cpu.report()
	if want, ok := benchDigests[[2]int{nodes, pending}]; ok && plugins == "" {
		if got := forecastDigest(b, f); got != want {
			b.Fatalf("the forecast of %d pending on %d nodes changed: digest %s, want %s", pending, nodes, got, want)
		}
	}
}

// benchDigests pins the forecasts of benchState (nodes, pending) with the
// default plugins: forecastDigest of each, as it was before the forecast
// was made faster (2026-11-29).
var benchDigests = map[[2]int]string{
	{300, 2000}:    "dda982f68b2f37b3a4550e46500b491871ed63f2e1ea1060bed2c2aefcca74a8",
	{1500, 10_000}: "9404fdf7f2e983c0eab1a18c0bc194e118325638454ffaae48ef1755155fed29",
}

// forecastDigest is the SHA-256 of f in JSON, in hex: every pod's start,
// node, wait and basis.
func forecastDigest(tb testing.TB, f *Forecast) string {
	j, err := json.Marshal(f)
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(j))
}

// TestForecastBenchStateUnchanged runs BenchmarkForecastFifth's forecast
// once and checks it against its pinned digest, so that the test suite,
// not only the benchmark, sees a change in a forecast of thousands of
// pods waiting on a full cluster (the benchmarks' shape, where the
// queue's and the cycles' shortcuts matter most).
func TestForecastBenchStateUnchanged(t *testing.T) {
	f, err := RunForecast(&Scenario{Name: "bench", Seed: 1}, benchState(300, 2000), ForecastOptions{Horizon: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := forecastDigest(t, f), benchDigests[[2]int{300, 2000}]; got != want {
		t.Fatalf("forecast digest %s, want %s", got, want)
	}
}

// cpuMeter reports a benchmark's CPU time per operation (cpu-ns/op: user
// and system, of every thread, the collector's included), which a machine
// shared with other work changes less than the wall time, and, for
// benchmarks that note each operation's end (lap), the wall time of the
// slowest operation (max-ns) and the 99th percentile (p99-ns, nearest
// rank: the slowest of up to 100 operations).
type cpuMeter struct {
	b     *testing.B
	start time.Duration
	last  time.Time
	laps  []time.Duration
}

func startCPU(b *testing.B) *cpuMeter {
	b.ResetTimer()
	return &cpuMeter{b: b, start: cpuTime(), last: time.Now()}
}

// lap notes the wall time of the operation that just ended.
func (m *cpuMeter) lap() {
	now := time.Now()
	m.laps = append(m.laps, now.Sub(m.last))
	m.last = now
}

func (m *cpuMeter) report() {
	if n := len(m.laps); n > 0 {
		slices.Sort(m.laps)
		m.b.ReportMetric(float64(m.laps[n-1].Nanoseconds()), "max-ns")
		m.b.ReportMetric(float64(m.laps[(99*n+99)/100-1].Nanoseconds()), "p99-ns")
	}
	if c := cpuTime() - m.start; c > 0 && m.b.N > 0 {
		m.b.ReportMetric(float64(c.Nanoseconds())/float64(m.b.N), "cpu-ns/op")
	}
}

// BenchmarkWhatIf asks about one pod on a 5,000-node cluster with 100
// pods pending (the goal is under 200 ms at p99: run it with -benchtime
// 100x for p99-ns to be a 99th percentile), building the cluster for
// each. BenchmarkWhatIfFrom starts from the forecast without the pod,
// made once, and BenchmarkWhatIfBase from that forecast and the cluster
// built once (ForecastBase), as a live scheduler does.
func BenchmarkWhatIf(b *testing.B)     { benchWhatIf(b, "", false, false) }
func BenchmarkWhatIfFrom(b *testing.B) { benchWhatIf(b, "", true, false) }
func BenchmarkWhatIfBase(b *testing.B) { benchWhatIf(b, "", true, true) }

func benchWhatIf(b *testing.B, plugins string, from, base bool) {
	st := benchState(5000, 100)
	st.Namespaces = []*v1.Namespace{{}}
	st.Namespaces[0].Name = "default"
	sc := &Scenario{Name: "bench", Seed: 1}
	sc.Scheduler.Plugins = plugins
	o := ForecastOptions{Horizon: 24 * time.Hour}
	if base {
		var err error
		if o.Base, err = NewForecastBase(st); err != nil {
			b.Fatal(err)
		}
	}
	before, err := RunForecast(sc, st, o)
	if err != nil {
		b.Fatal(err)
	}
	cpu := startCPU(b)
	for b.Loop() {
		in := &WhatIfInput{Pods: []*v1.Pod{testPod("w", "", "2", "1h")}}
		in.Pods[0].UID = types.UID("")
		var w *WhatIf
		var err error
		if from {
			w, err = RunWhatIfFrom(sc, st, before, in, o)
		} else {
			w, err = RunWhatIf(sc, st, in, o)
		}
		if err != nil {
			b.Fatal(err)
		}
		if !w.Pods[0].Forecast.Starts {
			b.Fatal("the pod does not start within the horizon")
		}
		cpu.lap()
	}
	cpu.report()
}
