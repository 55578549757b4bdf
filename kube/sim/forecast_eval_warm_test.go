package sim

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func warmPod(name string, created, deleted, scheduled int64) tracePod {
	return tracePod{pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelQoS: "LS"}}},
		created: created, deleted: deleted, scheduled: scheduled}
}

// The warm history at a split at t0 holds as finished only the runs that
// ended by t0; a run going on at t0 is censored at t0 − creation, and
// nothing created at t0 or later, or not started by t0, is in it.
func TestWarmRunsUseNothingAfterT0(t *testing.T) {
	const t0 = 1000
	for _, c := range []struct {
		name                        string
		created, deleted, scheduled int64
		want                        *warmRun // nil: not in the history
	}{
		{"ended before t0", 100, 400, 105, &warmRun{d: 300 * time.Second}},
		{"ended exactly at t0", 100, t0, 100, &warmRun{d: 900 * time.Second}},
		{"ends a second after t0", 100, t0 + 1, 100, &warmRun{d: 900 * time.Second, going: true}},
		{"ends months after t0", 10, t0 + 10_000_000, 10, &warmRun{d: 990 * time.Second, going: true}},
		{"started exactly at t0, going", 500, 5000, t0, &warmRun{d: 500 * time.Second, going: true}},
		{"created before t0, started after: pending then", 900, 5000, t0 + 5, nil},
		{"never scheduled in production", 100, 400, -1, nil},
		{"created at t0: replayed, not learnt", t0, t0 + 50, t0, nil},
		{"created after t0", t0 + 1, t0 + 50, t0 + 1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp := warmPod("p", c.created, c.deleted, c.scheduled)
			runs := warmRuns([]tracePod{tp}, t0)
			if c.want == nil {
				if len(runs) != 0 {
					t.Fatalf("runs %+v, want none", runs)
				}
				return
			}
			if len(runs) != 1 || runs[0].pod != tp.pod || runs[0].d != c.want.d || runs[0].going != c.want.going {
				t.Fatalf("runs %+v, want one of %v, going %v", runs, c.want.d, c.want.going)
			}
			if r := runs[0]; !r.going && time.Duration(c.created)*time.Second+r.d > t0*time.Second {
				t.Fatalf("a finished run ends at %v, after t0", time.Duration(c.created)*time.Second+r.d)
			}
		})
	}
}

// seed files the going runs as censored: the finished runs alone
// (MedianFinished) do not see them, and Kaplan–Meier counts them only as
// having lasted longer than they had run.
func TestSeedCensorsGoingRuns(t *testing.T) {
	runs := func(finished, going time.Duration) []warmRun {
		var rs []warmRun
		for i := range 3 {
			rs = append(rs, warmRun{pod: warmPod("a", 0, 0, 0).pod, d: finished + time.Duration(i)*time.Second},
				warmRun{pod: warmPod("b", 0, 0, 0).pod, d: going + time.Duration(i)*time.Second, going: true})
		}
		return rs
	}
	for _, c := range []struct {
		name   string
		method HistoryMethod
		runs   []warmRun
		want   time.Duration // the median
	}{
		{"finished runs alone: the long going runs are not among them", MedianFinished, runs(10*time.Second, time.Hour), 11 * time.Second},
		{"Kaplan–Meier: short going runs are no ends", KaplanMeier, runs(time.Hour, 10*time.Second), time.Hour + time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := NewHistory(LabelQoS)
			h.Method = c.method
			seed(h, c.runs)
			if d, ok := h.Quantile(warmPod("asked", 0, 0, 0).pod, 0, 0.5); !ok || d != c.want {
				t.Fatalf("median %v %v, want %v", d, ok, c.want)
			}
		})
	}
}

// window keeps the pods created at the split or later and counts their
// times from it.
func TestTraceWindow(t *testing.T) {
	pods := []tracePod{warmPod("before", 10, 5000, 12), warmPod("at", 100, 400, 101), warmPod("after", 150, 160, -1)}
	got := window(pods, 100)
	type times struct{ created, deleted, scheduled int64 }
	want := map[string]times{"at": {0, 300, 1}, "after": {50, 60, -1}}
	if len(got) != len(want) {
		t.Fatalf("%d pods kept, want %d", len(got), len(want))
	}
	for _, tp := range got {
		if w, ok := want[tp.pod.Name]; !ok || (times{tp.created, tp.deleted, tp.scheduled}) != w {
			t.Errorf("%s: %d %d %d, want %+v (kept: %v)", tp.pod.Name, tp.created, tp.deleted, tp.scheduled, w, ok)
		}
	}
	if pods[1].created != 100 {
		t.Error("window changed its input")
	}
}

// A split trace replays only the pods created from the split on, from
// the replay's start; the fixture's pods before second 20 never arrive.
func TestTraceSplitReplay(t *testing.T) {
	sc := traceScenario("testdata/alibaba")
	sc.Trace.from = 20
	r := run(t, sc)
	created := map[string]float64{}
	for _, rec := range r.Records {
		created[rec.Name] = rec.Created
	}
	want := map[string]float64{"pod-v100": 0, "pod-eight": 10, "pod-two": 30, "pod-late": 40}
	if len(created) != len(want) {
		t.Fatalf("pods replayed %v, want %v", created, want)
	}
	for name, at := range want {
		if got, ok := created[name]; !ok || got != at {
			t.Errorf("%s created at %vs (replayed: %v), want %vs", name, got, ok, at)
		}
	}
}

// Eval seeds the warm history with the runs before the split, and
// refuses a warm history without a split.
func TestEvalWarm(t *testing.T) {
	for _, c := range []struct {
		name             string
		from, every      time.Duration // every: the forks' interval, 0 for Eval's default
		warm             bool
		runs, going      int
		wantErr, history string
	}{
		{"warm at 20s: three pods going", 20 * time.Second, 0, true, 3, 3, "", "warm: 3 runs"},
		{"warm at 600s: two ended, pod-two not started", 600 * time.Second, 0, true, 5, 3, "", "warm: 5 runs"},
		{"cold split", 20 * time.Second, 0, false, 0, 0, "", "cold"},
		{"warm without a split", 0, 0, true, 0, 0, "a warm history needs a split", ""},
		{"negative split", -time.Second, 0, false, 0, 0, "(EvalOptions.From) -1s is before its start", ""},
		{"negative interval", 20 * time.Second, -time.Second, false, 0, 0, "(EvalOptions.Every) -1s and the horizon (EvalOptions.Horizon) 24h0m0s must be positive", ""},
		{"split of a pod list without times", 20 * time.Second, 0, false, 0, 0, "a split at 20s needs a pod list with time columns", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := "testdata/alibaba"
			if strings.Contains(c.name, "without times") {
				dir = t.TempDir()
				nodes, _ := os.ReadFile("testdata/alibaba/openb_node_list_all_node.csv")
				os.WriteFile(filepath.Join(dir, "openb_node_list_all_node.csv"), nodes, 0o644)
				os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte(strings.Join(podColumnsShort, ",")+"\np,1000,1024,0,0\n"), 0o644)
			}
			rep, err := Eval(EvalOptions{Dir: dir, Speed: 1, From: c.from, Warm: c.warm, MainRows: true, Every: c.every})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.WarmRuns != c.runs || rep.WarmGoing != c.going {
				t.Fatalf("warm runs %d, going %d; want %d, %d", rep.WarmRuns, rep.WarmGoing, c.runs, c.going)
			}
			var b strings.Builder
			rep.Write(&b)
			if !strings.Contains(b.String(), "history "+c.history) {
				t.Fatalf("report says not %q:\n%s", c.history, b.String())
			}
		})
	}
}

func TestMedianCreation(t *testing.T) {
	// The fixture's creation times: 0, 10, 10, 20, 30, 50, 60.
	if d, err := MedianCreation("testdata/alibaba"); err != nil || d != 20*time.Second {
		t.Fatalf("median %v %v, want 20s", d, err)
	}
	if _, err := MedianCreation(t.TempDir()); err == nil || !strings.Contains(err.Error(), "openb_node_list_all_node.csv") {
		t.Fatalf("empty dir: %v, want the missing file named", err)
	}
}

func TestEvalFromEnv(t *testing.T) {
	for _, c := range []struct {
		name, v string
		want    time.Duration
		wantErr string
	}{
		{"unset: no split", "", 0, ""},
		{"median", "median", 20 * time.Second, ""},
		{"a duration", "2h", 2 * time.Hour, ""},
		{"neither", "soon", 0, `SCHEDQ_FORECAST_FROM: "soon" is not median or a duration`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := evalFrom("testdata/alibaba", c.v)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || d != c.want {
				t.Fatalf("%v %v, want %v", d, err, c.want)
			}
		})
	}
}

// WritePairs writes one row per method and scored pod, with the pod's
// classes and, where the method records them, the predicted and actual
// nodes; a missing start is +Inf.
func TestEvalWritePairs(t *testing.T) {
	p := warmPod("pod-a", 0, 0, 0).pod
	p.Labels[LabelGPURequest], p.Labels[LabelRequests] = "1x1000", "1000m-1024Mi-1x1000"
	rep := &EvalReport{Methods: []*EvalMethod{
		{Name: "first", pairs: [][2]float64{{90, 120}}, pods: []*v1.Pod{p}, forks: []time.Duration{20 * time.Minute}, nodes: [][2]string{{"n1", "n2"}}},
		{Name: "none"},
		{Name: "third", pairs: [][2]float64{{math.Inf(1), 120}}, pods: []*v1.Pod{p}, forks: []time.Duration{20 * time.Minute}},
	}}
	var b strings.Builder
	if err := rep.WritePairs(&b); err != nil {
		t.Fatal(err)
	}
	want := "method,fork_s,pod,qos,gpu_request,requests,predicted_s,actual_s,predicted_node,actual_node\n" +
		"0,1200,pod-a,LS,1x1000,1000m-1024Mi-1x1000,90.0,120.0,n1,n2\n" +
		"2,1200,pod-a,LS,1x1000,1000m-1024Mi-1x1000,+Inf,120.0,,\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// calibration puts a running pod's true remaining runtime in the tenth
// of the history's conditional estimate it falls in; a pod of a kind
// with no runs is counted as having no estimate, one whose runtime is
// not known is left out.
func TestCalibration(t *testing.T) {
	h := NewHistory(LabelQoS)
	for i := 1; i <= 100; i++ { // runs of 1 s to 100 s: the q-quantile is 100q s
		h.Observe(warmPod("done", 0, 0, 0).pod, time.Duration(i)*time.Second)
	}
	now := epoch.Add(time.Hour)
	for _, c := range []struct {
		name     string
		qos      string
		elapsed  time.Duration
		runtime  time.Duration // 0: not known
		decile   int           // -1: no estimate
		excluded bool
	}{
		{"shorter than the 0.1-quantile", "LS", 0, 5 * time.Second, 0, false},
		{"at the median: the tenth below it", "LS", 0, 50 * time.Second, 4, false},
		{"just past the median", "LS", 0, 55 * time.Second, 5, false},
		{"past the 0.9-quantile", "LS", 0, 100 * time.Second, 9, false},
		{"conditional on 50 s run: 25 s left of runs 51 to 100 s", "LS", 50 * time.Second, 75 * time.Second, 4, false},
		{"a kind with no runs", "BE", 0, 10 * time.Second, -1, false},
		{"runtime not known", "LS", 0, 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := warmPod("running", 0, 0, 0).pod
			p.Labels[LabelQoS] = c.qos
			st := &ForecastState{Now: now, Running: []RunningPod{{Pod: p, Started: now.Add(-c.elapsed)}}}
			known := func(*v1.Pod) (time.Duration, bool) { return c.runtime, c.runtime > 0 }
			deciles, none := calibration(h, st, known)
			var want [10]int
			wantNone := 0
			switch {
			case c.excluded:
			case c.decile < 0:
				wantNone = 1
			default:
				want[c.decile] = 1
			}
			if deciles != want || none != wantNone {
				t.Fatalf("deciles %v, none %d; want %v, %d", deciles, none, want, wantNone)
			}
		})
	}
}
