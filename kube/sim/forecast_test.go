package sim

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testPod makes a pod of cpu cores; node binds it; runtime, if set,
// declares it in the annotation.
func testPod(name, node string, cpu string, runtime string) *v1.Pod {
	prio := int32(0)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("u-" + name)},
		Spec: v1.PodSpec{SchedulerName: schedulerName, Priority: &prio, NodeName: node,
			Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: *resourceQuantity(cpu)}}}}},
	}
	if runtime != "" {
		p.Annotations = map[string]string{RuntimeAnnotation: runtime}
	}
	return p
}

// testState is two 4-core nodes: n-0 runs a with 50 minutes left by its
// annotation, n-1 runs u, whose end is unknown; b and c wait for 4 cores.
func testState() *ForecastState {
	now := epoch.Add(10 * time.Hour)
	nodes := newCluster().makeNodes(NodeGroup{Name: "n", Count: 2, Capacity: map[string]string{"cpu": "4", "memory": "8Gi"}})
	return &ForecastState{
		Now:   now,
		Nodes: nodes,
		Running: []RunningPod{
			{Pod: testPod("a", "n-0", "4", "1h"), Started: now.Add(-10 * time.Minute)},
			{Pod: testPod("u", "n-1", "4", ""), Started: now.Add(-time.Hour)},
		},
		Pending: []*v1.Pod{testPod("b", "", "4", "30m"), testPod("c", "", "4", "")},
	}
}

func TestForecastStartsAtEstimatedEnds(t *testing.T) {
	st := testState()
	f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Of(types.NamespacedName{Namespace: "default", Name: "b"})
	if !b.Starts || b.Node != "n-0" || b.Wait < 50*time.Minute || b.Wait > 50*time.Minute+time.Second {
		t.Errorf("b: got %+v, want a start on n-0 about 50m from now", b)
	}
	if len(b.Basis) != 1 || b.Basis[0] != (SourceCount{SourceAnnotation, 1}) || b.Unknown != 1 {
		t.Errorf("b's basis: got %+v unknown %d, want one annotation and one unknown", b.Basis, b.Unknown)
	}
	c, _ := f.Of(types.NamespacedName{Namespace: "default", Name: "c"})
	if !c.Starts || c.Wait < 80*time.Minute || c.Wait > 80*time.Minute+time.Second {
		t.Errorf("c: got %+v, want a start about 80m from now, after b's 30m", c)
	}
	if f.Unknown != 1 || !strings.HasPrefix(f.Arrivals, "none") {
		t.Errorf("got unknown %d arrivals %q", f.Unknown, f.Arrivals)
	}
}

func TestForecastNotWithinHorizon(t *testing.T) {
	f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, testState(), ForecastOptions{Horizon: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := f.Of(types.NamespacedName{Namespace: "default", Name: "c"})
	if c.Starts || c.Unknown != 1 {
		t.Errorf("c: got %+v, want no start within the hour, depending on one unknown end", c)
	}
}

func TestForecastBadInput(t *testing.T) {
	sc := &Scenario{Name: "t", Seed: 1}
	for _, h := range []time.Duration{0, -time.Second, MaxHorizon + 1} {
		if _, err := RunForecast(sc, testState(), ForecastOptions{Horizon: h}); err == nil || !strings.Contains(err.Error(), "horizon") {
			t.Errorf("horizon %v: got %v, want an error about the horizon", h, err)
		}
	}
	f, err := RunForecast(sc, testState(), ForecastOptions{Horizon: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Of(types.NamespacedName{Namespace: "default", Name: "a"}); err == nil || !strings.Contains(err.Error(), "not pending") {
		t.Errorf("a running pod: got %v, want 'not pending'", err)
	}
	st := testState()
	st.Pending = append(st.Pending, st.Pending[0])
	if _, err := RunForecast(sc, st, ForecastOptions{Horizon: time.Hour}); err == nil || !strings.Contains(err.Error(), "UID") {
		t.Errorf("a pod twice: got %v, want an error about its UID", err)
	}
}

func TestForecastSourcesInOrder(t *testing.T) {
	h := NewHistory("team")
	for _, d := range []time.Duration{10, 20, 30, 40} {
		p := testPod("h", "", "1", "")
		p.Labels = map[string]string{"team": "x"}
		h.Observe(p, d*time.Minute)
	}
	o := ForecastOptions{History: h}
	p := testPod("p", "", "1", "")
	p.Labels = map[string]string{"team": "x"}
	if d, src := o.remaining(p, 15*time.Minute); src != SourceHistory || d != 15*time.Minute {
		t.Errorf("history after 15m: got %v %s, want the median of 20,30,40 less 15m: 15m", d, src)
	}
	if _, src := o.remaining(p, 25*time.Minute); src != SourceUnknown {
		t.Errorf("history after 25m (two runtimes longer): got %s, want unknown", src)
	}
	ds := int64(600)
	p.Spec.ActiveDeadlineSeconds = &ds
	if d, src := o.remaining(p, time.Minute); src != SourceDeadline || d != 9*time.Minute {
		t.Errorf("deadline: got %v %s", d, src)
	}
	p.Annotations = map[string]string{RuntimeAnnotation: "2m"}
	if d, src := o.remaining(p, time.Minute); src != SourceAnnotation || d != time.Minute {
		t.Errorf("annotation: got %v %s", d, src)
	}
	if d, src := o.remaining(p, 3*time.Minute); src != SourceDeadline || d != 7*time.Minute {
		t.Errorf("annotation exceeded: got %v %s, want the deadline next", d, src)
	}
}

func TestForecastDeterministic(t *testing.T) {
	var out []string
	for range 2 {
		f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, testState(), ForecastOptions{Horizon: 3 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(f)
		out = append(out, string(b))
	}
	if out[0] != out[1] {
		t.Errorf("two runs differ:\n%s\n%s", out[0], out[1])
	}
}

// TestForecastWithArrivals: a pod of higher priority arrived 30 minutes
// ago; with arrivals its like comes again 30 minutes from now, takes the
// node a frees at 50 minutes for its 20, and b starts at 70.
func TestForecastWithArrivals(t *testing.T) {
	st := testState()
	x := testPod("x", "", "4", "20m")
	prio := int32(100)
	x.Spec.Priority = &prio
	st.Recent, st.Window = []Arrival{{Pod: x, At: st.Now.Add(-30 * time.Minute)}}, time.Hour
	b := types.NamespacedName{Namespace: "default", Name: "b"}
	for _, c := range []struct {
		arrivals bool
		want     time.Duration
	}{{false, 50 * time.Minute}, {true, 70 * time.Minute}} {
		f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: 3 * time.Hour, Arrivals: c.arrivals})
		if err != nil {
			t.Fatal(err)
		}
		pf, _ := f.Of(b)
		if !pf.Starts || pf.Wait < c.want || pf.Wait > c.want+time.Second {
			t.Errorf("arrivals %v: b got %+v, want a start at about %v", c.arrivals, pf, c.want)
		}
		if c.arrivals != strings.HasPrefix(f.Arrivals, "recent rate") {
			t.Errorf("arrivals %v: the answer says %q", c.arrivals, f.Arrivals)
		}
	}
}

// TestForecastArrivalsStopAtTheLimit: recent arrivals of 20 a second,
// repeated over three hours, would be 216,000 pods; the forecast assumes
// MaxAssumedArrivals of them, until 500 s from now, and says so. (The
// arrivals are gated, so that the run stays cheap.)
func TestForecastArrivalsStopAtTheLimit(t *testing.T) {
	st := testState()
	low := int32(-1)
	for i := range 20 {
		p := testPod(fmt.Sprintf("gated-%d", i), "", "1", "1m")
		p.Spec.Priority = &low
		p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/hold"}}
		st.Recent = append(st.Recent, Arrival{Pod: p, At: st.Now.Add(-time.Second + time.Duration(i)*time.Second/20)})
	}
	st.Window = time.Second
	f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: 3 * time.Hour, Arrivals: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("for 8m20s, up to %d pods", MaxAssumedArrivals); !strings.Contains(f.Arrivals, want) {
		t.Errorf("arrivals %q, want it to say %q", f.Arrivals, want)
	}
	if b, _ := f.Of(types.NamespacedName{Namespace: "default", Name: "b"}); !b.Starts || b.Wait < 50*time.Minute || b.Wait > 50*time.Minute+time.Second {
		t.Errorf("b: got %+v, want a start about 50m from now, the arrivals gated", b)
	}
}

// TestForecastCountsUnknownEndsOfPodsStartedInTheRun: a pod that starts
// during the forecast with no runtime estimate runs until unknown too, and
// a pod waiting behind it says so (Unknown), as it does of the running
// pods with an unknown end; a pod it started before and that has ended is
// not counted.
func TestForecastCountsUnknownEndsOfPodsStartedInTheRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cpu     string
		pending []*v1.Pod
		pod     string
		starts  bool
		unknown int
	}{
		{name: "behind a pod with no runtime", cpu: "4",
			pending: []*v1.Pod{testPod("a", "", "4", ""), testPod("b", "", "4", "30m")},
			pod:     "b", unknown: 1},
		{name: "after a pod with no runtime and one that ends", cpu: "8",
			pending: []*v1.Pod{testPod("a", "", "4", ""), testPod("b", "", "4", "10m"), testPod("c", "", "4", "")},
			pod:     "c", starts: true, unknown: 1},
		{name: "after a pod that ends", cpu: "4",
			pending: []*v1.Pod{testPod("a", "", "4", "10m"), testPod("b", "", "4", "")},
			pod:     "b", starts: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &ForecastState{Now: epoch.Add(10 * time.Hour),
				Nodes:   newCluster().makeNodes(NodeGroup{Name: "n", Count: 1, Capacity: map[string]string{"cpu": tc.cpu, "memory": "8Gi"}}),
				Pending: tc.pending}
			f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			p, _ := f.Of(types.NamespacedName{Namespace: "default", Name: tc.pod})
			if p.Starts != tc.starts || p.Unknown != tc.unknown {
				t.Errorf("%s: starts %v, unknown %d; want %v, %d", tc.pod, p.Starts, p.Unknown, tc.starts, tc.unknown)
			}
		})
	}
}

// TestForecastDeadlineBoundsTheDeclaredRuntime: a pod ends by its
// activeDeadlineSeconds at the latest (the kubelet stops it there), so a
// declared runtime longer than its deadline gives way to the deadline: a
// running pod a, declaring 2h with a deadline of an hour, started 10
// minutes ago, frees its node for b in 50 minutes, not 110.
func TestForecastDeadlineBoundsTheDeclaredRuntime(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name     string
		runtime  string
		deadline *int64
		want     time.Duration
		source   string
	}{
		{name: "declared, within the deadline", runtime: "30m", deadline: secs(3600), want: 20 * time.Minute, source: SourceAnnotation},
		{name: "declared, past the deadline", runtime: "2h", deadline: secs(3600), want: 50 * time.Minute, source: SourceDeadline},
		{name: "declared, no deadline", runtime: "2h", want: 110 * time.Minute, source: SourceAnnotation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := epoch.Add(10 * time.Hour)
			a := testPod("a", "n-0", "4", tc.runtime)
			a.Spec.ActiveDeadlineSeconds = tc.deadline
			st := &ForecastState{Now: now,
				Nodes:   newCluster().makeNodes(NodeGroup{Name: "n", Count: 1, Capacity: map[string]string{"cpu": "4", "memory": "8Gi"}}),
				Running: []RunningPod{{Pod: a, Started: now.Add(-10 * time.Minute)}},
				Pending: []*v1.Pod{testPod("b", "", "4", "1h")}}
			f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: 3 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := f.Of(types.NamespacedName{Namespace: "default", Name: "b"})
			if !b.Starts || b.Wait < tc.want || b.Wait > tc.want+time.Second || len(b.Basis) != 1 || b.Basis[0].Source != tc.source {
				t.Errorf("b: starts %v in %v on basis %v; want in %v on one end by %s", b.Starts, b.Wait, b.Basis, tc.want, tc.source)
			}
		})
	}
}
