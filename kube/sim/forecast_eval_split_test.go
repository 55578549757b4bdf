package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// splitState is a state at 1h with three running pods of class a on two
// nodes, one of class b, and a pending pod of class a, with their true
// runtimes, and a pending pod of class b.
func splitState() (*ForecastState, map[types.UID]time.Duration) {
	now := epoch.Add(time.Hour)
	pod := func(name, class, node string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{"class": class}},
			Spec: v1.PodSpec{NodeName: node}}
	}
	st := &ForecastState{Now: now}
	life := map[types.UID]time.Duration{}
	for _, r := range []struct {
		name, class, node string
		elapsed, left     time.Duration
	}{
		{"a1", "a", "n1", 10 * time.Minute, 10 * time.Minute},
		{"a2", "a", "n1", 20 * time.Minute, 30 * time.Minute},
		{"a3", "a", "n2", 5 * time.Minute, 50 * time.Minute},
		{"b1", "b", "n2", 40 * time.Minute, 70 * time.Minute},
	} {
		st.Running = append(st.Running, RunningPod{Pod: pod(r.name, r.class, r.node), Started: now.Add(-r.elapsed)})
		life[types.UID(r.name)] = r.elapsed + r.left
	}
	st.Pending = []*v1.Pod{pod("p1", "a", ""), pod("p2", "b", "")}
	life["p1"], life["p2"] = 90*time.Minute, 100*time.Minute
	return st, life
}

// The split rows' knowledge: the running or the pending pods' true
// runtimes alone; each class's true remaining runtimes shuffled among
// its running pods (on one node, by node), so that the class's (the
// node's) remaining runtimes are the true ones; the true order of the
// remaining runtimes within a class as quantiles.
func TestSplitTruth(t *testing.T) {
	st, life := splitState()
	known := func(p *v1.Pod) (time.Duration, bool) { d, ok := life[p.UID]; return d, ok }
	x := newTruth(st, NewHistory("class"), known)
	elapsed := map[string]time.Duration{"a1": 10 * time.Minute, "a2": 20 * time.Minute, "a3": 5 * time.Minute, "b1": 40 * time.Minute}
	byName := map[string]*v1.Pod{"p1": st.Pending[0], "p2": st.Pending[1]}
	for _, r := range st.Running {
		byName[r.Pod.Name] = r.Pod
	}
	// left returns the remaining runtimes a Known gives the named pods.
	left := func(k func(*v1.Pod) (time.Duration, bool), names ...string) []time.Duration {
		var out []time.Duration
		for _, n := range names {
			d, ok := k(byName[n])
			if !ok {
				d = -1
			} else {
				d -= elapsed[n]
			}
			out = append(out, d)
		}
		return out
	}
	m := time.Minute
	byClass := func(seed uint64) func(*v1.Pod) (time.Duration, bool) { return x.shuffled(false, seed) }
	byNode := func(seed uint64) func(*v1.Pod) (time.Duration, bool) { return x.shuffled(true, seed) }
	byAge := func(seed uint64) func(*v1.Pod) (time.Duration, bool) { return x.shuffledBy(false, true, seed) }
	// Each case holds for every seed of 20; the shuffles hold it for
	// reasons other than luck.
	for _, c := range []struct {
		name   string
		k      func(seed uint64) func(*v1.Pod) (time.Duration, bool)
		pods   []string
		want   []time.Duration // -1: no runtime given
		sorted bool            // compare as multisets
	}{
		{"running only", func(uint64) func(*v1.Pod) (time.Duration, bool) { return x.only(true) }, []string{"a1", "b1", "p1"}, []time.Duration{10 * m, 70 * m, -1}, false},
		{"pending only", func(uint64) func(*v1.Pod) (time.Duration, bool) { return x.only(false) }, []string{"a1", "b1", "p1"}, []time.Duration{-1, -1, 90 * m}, false},
		{"shuffled by class: class a's remaining runtimes", byClass, []string{"a1", "a2", "a3"}, []time.Duration{10 * m, 30 * m, 50 * m}, true},
		{"shuffled by class: alone in its class, its own", byClass, []string{"b1"}, []time.Duration{70 * m}, false},
		{"shuffled by class: pending pods of other classes keep their own", byClass, []string{"p1", "p2"}, []time.Duration{90 * m, 100 * m}, false},
		{"shuffled by class and node: node n1's", byNode, []string{"a1", "a2"}, []time.Duration{10 * m, 30 * m}, true},
		{"shuffled by class and node: alone on its node, its own", byNode, []string{"a3", "b1"}, []time.Duration{50 * m, 70 * m}, false},
		{"shuffled by class and age: each of another power of two, its own", byAge, []string{"a1", "a2", "a3"}, []time.Duration{10 * m, 30 * m, 50 * m}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for seed := range uint64(20) {
				got := left(c.k(seed), c.pods...)
				if c.sorted {
					slices.Sort(got)
				}
				if !slices.Equal(got, c.want) {
					t.Fatalf("seed %d: remaining %v, want %v", seed, got, c.want)
				}
			}
		})
	}
	t.Run("some seed moves a runtime between pods of a class", func(t *testing.T) {
		for seed := range uint64(20) {
			if got := left(x.shuffled(false, seed), "a1", "a2", "a3"); !slices.Equal(got, []time.Duration{10 * m, 30 * m, 50 * m}) {
				return
			}
		}
		t.Fatal("no seed of 20 shuffled class a")
	})
	t.Run("true order", func(t *testing.T) {
		q := x.trueOrder()
		// Class a: a1 (10m left), a2 (30m), a3 (50m), p1 (90m); class b:
		// b1 (70m), p2 (100m).
		want := map[types.UID]float64{"a1": 0.125, "a2": 0.375, "a3": 0.625, "p1": 0.875, "b1": 0.25, "p2": 0.75}
		for uid, w := range want {
			if math.Abs(q[uid]-w) > 1e-9 {
				t.Errorf("%s: quantile %v, want %v", uid, q[uid], w)
			}
		}
	})
}

// percentileWaits is each pod's nearest-rank percentile of its runs'
// waits, a run that does not start it counting as the longest.
func TestPercentileWaits(t *testing.T) {
	s := time.Second
	waits := [][]time.Duration{{5 * s, 1 * s, 3 * s, 2 * s, 4 * s}, {1 * s, neverStarts, neverStarts}}
	for _, c := range []struct {
		name string
		p    int
		want []float64
	}{
		{"20th: the first of five", 20, []float64{1, 1}},
		{"50th: the third of five, the second of three", 50, []float64{3, math.Inf(1)}},
		{"80th: the fourth of five", 80, []float64{4, math.Inf(1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := percentileWaits(waits, c.p); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	if waits[0][0] != 5*s {
		t.Fatal("percentileWaits sorted its input")
	}
}

// SpreadApart spreads a class's running pods over the strata among
// themselves, whatever pending pods the class has, and the pending pods
// among themselves.
func TestStratifiedApart(t *testing.T) {
	st, _ := splitState()
	q := (&ForecastOptions{History: stratifiedApart(NewHistory("class"))}).historyFor(st, nil).quantile
	var a []float64
	for _, uid := range []types.UID{"a1", "a2", "a3"} {
		a = append(a, q[uid])
	}
	slices.Sort(a)
	if want := []float64{1.0 / 6, 0.5, 5.0 / 6}; math.Abs(a[0]-want[0]) > 1e-9 || math.Abs(a[1]-want[1]) > 1e-9 || math.Abs(a[2]-want[2]) > 1e-9 {
		t.Errorf("class a's running pods: quantiles %v, want %v", a, want)
	}
	for _, uid := range []types.UID{"b1", "p1", "p2"} {
		if q[uid] != 0.5 {
			t.Errorf("%s, alone among the running or the pending pods of its class: quantile %v, want 0.5", uid, q[uid])
		}
	}
}
