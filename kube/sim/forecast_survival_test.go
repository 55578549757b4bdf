package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func teamPod(name string) *v1.Pod {
	p := testPod(name, "", "1", "")
	p.UID = types.UID(name)
	p.Labels = map[string]string{"team": "x"}
	return p
}

// TestKaplanMeierMedianCensored: finished runs of 1, 2, 3 and 10 min and
// five runs still going at 4 to 8 min. S steps at 1 (8/9), 2 (7/9), 3
// (6/9) and only falls to 0.5 or below at 10 (0): the median is 10 min,
// where the finished runs alone say 3 min. Given 2 min already run, the
// observations beyond 2 min are 3, the five censored and 10: S(3) = 6/7,
// S(10) = 0, so 8 min remain. With finished runs of 1 and 2 and censored
// ones of 5, 6 and 7, S falls only to 4/5·3/4 = 0.6: the median lies
// beyond the data, and the estimate is the longest observation, 7 min.
func TestKaplanMeierMedianCensored(t *testing.T) {
	h := NewHistory("team")
	for _, d := range []time.Duration{1, 2, 3, 10} {
		h.Observe(teamPod("f"), d*time.Minute)
	}
	for _, d := range []time.Duration{4, 5, 6, 7, 8} {
		h.ObserveRunning(teamPod("r"), d*time.Minute)
	}
	p := teamPod("p")
	h.Method = MedianFinished
	if d, ok := h.Estimate(p, 0); !ok || d != 3*time.Minute {
		t.Errorf("finished only, from 0: got %v %v, want 3m (upper median of 1,2,3,10)", d, ok)
	}
	h.Method = KaplanMeier
	for _, c := range []struct{ elapsed, want time.Duration }{{0, 10 * time.Minute}, {2 * time.Minute, 8 * time.Minute}} {
		if d, ok := h.Estimate(p, c.elapsed); !ok || d != c.want {
			t.Errorf("Kaplan–Meier after %v: got %v %v, want %v", c.elapsed, d, ok, c.want)
		}
	}
	if d, ok := h.Quantile(p, 0, 0.2); !ok || d != 2*time.Minute {
		t.Errorf("Kaplan–Meier 0.2-quantile: got %v %v, want 2m (S(2) = 7/9 ≤ 0.8)", d, ok)
	}
	if _, ok := h.Estimate(p, 9*time.Minute); ok {
		t.Errorf("after 9m only one observation is longer: want no estimate")
	}

	b := NewHistory("team")
	b.Method = KaplanMeier
	for _, d := range []time.Duration{1, 2} {
		b.Observe(teamPod("f"), d*time.Minute)
	}
	for _, d := range []time.Duration{5, 6, 7} {
		b.ObserveRunning(teamPod("r"), d*time.Minute)
	}
	if d, ok := b.Estimate(p, 0); !ok || d != 7*time.Minute {
		t.Errorf("median beyond the data: got %v %v, want the longest observation, 7m", d, ok)
	}
}

// TestStratifiedQuantiles: four pods of one kind, with finished runs of
// 1 to 8 min, get the quantiles 1/8, 3/8, 5/8 and 7/8 in some order; S
// after k of the 8 runs is 1 − k/8, so their ends are 1, 3, 5 and 7 min.
// The same seed gives the same order; a pod of another kind keeps the
// median.
func TestStratifiedQuantiles(t *testing.T) {
	h := NewHistory("team")
	h.Method = KaplanMeier
	for d := time.Duration(1); d <= 8; d++ {
		h.Observe(teamPod("f"), d*time.Minute)
	}
	other := teamPod("other")
	other.Labels["team"] = "y"
	for d := time.Duration(1); d <= 3; d++ {
		h.Observe(other, d*time.Minute)
	}
	var pods []*v1.Pod
	for i := range 4 {
		pods = append(pods, teamPod(fmt.Sprint("p", i)))
	}
	ends := func(s *History) []time.Duration {
		var out []time.Duration
		for _, p := range pods {
			d, ok := s.Estimate(p, 0)
			if !ok {
				t.Fatalf("no estimate for %s", p.Name)
			}
			out = append(out, d)
		}
		return out
	}
	s := h.Stratified(append(pods, other), 7)
	got := ends(s)
	if sorted := slices.Sorted(slices.Values(got)); !slices.Equal(sorted, []time.Duration{time.Minute, 3 * time.Minute, 5 * time.Minute, 7 * time.Minute}) {
		t.Errorf("stratified ends: got %v, want 1m, 3m, 5m and 7m in some order", got)
	}
	if again := ends(h.Stratified(append(pods, other), 7)); !slices.Equal(again, got) {
		t.Errorf("same seed: got %v then %v", got, again)
	}
	if d, _ := s.Estimate(other, 0); d != 2*time.Minute {
		t.Errorf("the only pod of its kind: got %v, want the median quantile 0.5: 2m", d)
	}
	if d, _ := h.Estimate(pods[0], 0); d != 4*time.Minute {
		t.Errorf("the original history: got %v, want the median, 4m", d)
	}
	a, b := ends(h.Sampled(pods, 3)), ends(h.Sampled(pods, 3))
	if !slices.Equal(a, b) {
		t.Errorf("Sampled, same seed: got %v then %v", a, b)
	}
}

// TestHistoryForForecast: a forecast's History counts the state's running
// pods as censored: with finished runs of 1, 2, 3 and 10 min and three
// runs going for 5 min, S steps at 1 (6/7), 2 (5/7), 3 (4/7) and 10 (0),
// so the median is 10 min where the finished runs alone say 2 min (S(2) =
// 2/4). It stratifies only the pods whose runtimes it estimates: the 3
// running and 2 pending pods get 0.1, 0.3, 0.5, 0.7 and 0.9, the pod with
// a deadline none. The caller's History is unchanged.
func TestHistoryForForecast(t *testing.T) {
	h := NewHistory("team")
	for _, d := range []time.Duration{1, 2, 3, 10} {
		h.Observe(teamPod("f"), d*time.Minute)
	}
	now := epoch.Add(time.Hour)
	st := &ForecastState{Now: now}
	for i := range 3 {
		st.Running = append(st.Running, RunningPod{Pod: teamPod(fmt.Sprint("r", i)), Started: now.Add(-5 * time.Minute)})
	}
	ds := int64(60)
	withDeadline := teamPod("deadline")
	withDeadline.Spec.ActiveDeadlineSeconds = &ds
	st.Pending = []*v1.Pod{teamPod("p0"), withDeadline, teamPod("p1")}
	o := ForecastOptions{History: h}
	f := o.historyFor(st, nil)
	var qs []float64
	for _, q := range f.quantile {
		qs = append(qs, math.Round(q*10)/10)
	}
	if _, ok := f.quantile[withDeadline.UID]; ok || !slices.Equal(slices.Sorted(slices.Values(qs)), []float64{0.1, 0.3, 0.5, 0.7, 0.9}) {
		t.Errorf("quantiles %v: want 0.1 to 0.9 for the 3 running and 2 pending pods without a deadline", f.quantile)
	}
	p := teamPod("x")
	if d, _ := f.Quantile(p, 0, 0.5); d != 10*time.Minute {
		t.Errorf("median with the running pods censored: got %v, want 10m", d)
	}
	if d, _ := h.Quantile(p, 0, 0.5); d != 2*time.Minute || len(h.samples["label team=x"].c) != 0 || h.quantile != nil {
		t.Errorf("the caller's History changed: median %v", d)
	}
}

// kmDirect is the Kaplan–Meier quantile computed directly over the
// observations longer than elapsed, for TestKaplanMeierConditional.
func kmDirect(d, c []time.Duration, elapsed time.Duration, q float64) (time.Duration, bool) {
	var dd, cc []time.Duration
	for _, x := range d {
		if x > elapsed {
			dd = append(dd, x)
		}
	}
	for _, x := range c {
		if x > elapsed {
			cc = append(cc, x)
		}
	}
	if len(dd) == 0 || len(dd)+len(cc) < minHistory {
		return 0, false
	}
	s := 1.0
	for i, t := range dd {
		if i > 0 && dd[i-1] == t {
			continue // dd is sorted: one step per distinct time
		}
		atRisk, deaths := 0, 0
		for _, x := range append(slices.Clone(dd), cc...) {
			if x >= t {
				atRisk++
			}
		}
		for _, x := range dd {
			if x == t {
				deaths++
			}
		}
		s *= 1 - float64(deaths)/float64(atRisk)
		if s <= 1-q+1e-9 {
			return t - elapsed, true
		}
	}
	return slices.Max(cc) - elapsed, true
}

// TestKaplanMeierConditional: the quantile from the whole sample's S(t)
// ÷ S(elapsed) is the one computed directly over the observations longer
// than elapsed, on random runs with many ties.
func TestKaplanMeierConditional(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var d, c []time.Duration
		for range 1 + rng.IntN(30) {
			d = append(d, time.Duration(1+rng.IntN(20))*time.Minute)
		}
		for range rng.IntN(30) {
			c = append(c, time.Duration(1+rng.IntN(20))*time.Minute)
		}
		slices.Sort(d)
		slices.Sort(c)
		r := &runtimes{d: slices.Clone(d), c: slices.Clone(c)}
		r.prepare()
		elapsed := time.Duration(rng.IntN(20)) * time.Minute
		q := rng.Float64()
		got, ok := r.kmQuantile(elapsed, q, TailLongest)
		want, wok := kmDirect(d, c, elapsed, q)
		if got != want || ok != wok {
			t.Fatalf("trial %d: finished %v censored %v, after %v, q %.3f: got %v %v, want %v %v", trial, d, c, elapsed, q, got, ok, want, wok)
		}
	}
}

// TestHistoryClassesFallBack: with the labels team and size, a pod is
// estimated from its team and size while that class holds minClass runs
// longer than the pod has run, and from its team alone otherwise. Team x
// has minClass runs of size big, of 60 min, and 3·minClass of size small,
// of 10 min; the team's median is 10 min. Size tiny has two runs of 5
// min, too few: its pod gets the team's 10 min. A big pod that has run
// 30 min still has minClass longer runs in its class: 30 min remain. A
// history of the team label alone gives 10 min to all of them.
func TestHistoryClassesFallBack(t *testing.T) {
	sized := func(name, size string) *v1.Pod {
		p := teamPod(name)
		p.Labels["size"] = size
		return p
	}
	fill := func(h *History) {
		for i := range minClass {
			h.Observe(sized(fmt.Sprint("b", i), "big"), 60*time.Minute)
		}
		for i := range 3 * minClass {
			h.Observe(sized(fmt.Sprint("s", i), "small"), 10*time.Minute)
		}
		h.Observe(sized("t0", "tiny"), 5*time.Minute)
		h.Observe(sized("t1", "tiny"), 5*time.Minute)
	}
	cases := []struct {
		size    string
		elapsed time.Duration
		fine    time.Duration // by team and size
		coarse  time.Duration // by team alone
	}{
		{"big", 0, 60 * time.Minute, 10 * time.Minute},
		{"big", 30 * time.Minute, 30 * time.Minute, 30 * time.Minute},
		{"small", 0, 10 * time.Minute, 10 * time.Minute},
		{"tiny", 0, 10 * time.Minute, 10 * time.Minute},
	}
	fine, coarse := NewHistory("team", "size"), NewHistory("team")
	fill(fine)
	fill(coarse)
	for _, c := range cases {
		p := sized("p", c.size)
		if d, ok := fine.Estimate(p, c.elapsed); !ok || d != c.fine {
			t.Errorf("by team and size, %s after %v: got %v %v, want %v", c.size, c.elapsed, d, ok, c.fine)
		}
		if d, ok := coarse.Estimate(p, c.elapsed); !ok || d != c.coarse {
			t.Errorf("by team, %s after %v: got %v %v, want %v", c.size, c.elapsed, d, ok, c.coarse)
		}
	}
	if k := fine.Kind(sized("p", "big")); k != "label team=x,size=big" {
		t.Errorf("Kind: got %q, want the finest class", k)
	}
	if k := fine.Kind(teamPod("p")); k != "label team=x" {
		t.Errorf("Kind of a pod without size: got %q, want its team", k)
	}
}

// TestHistoryByControllerWithoutLabels: with no labels, a pod is
// estimated from the runs of its controller (the pods of one template)
// while that holds minClass runs, else from its owner kind and
// namespace. ReplicaSet fast has 3·minClass runs of 10 min, slow minClass
// runs of 60 min, few two runs of 5 min: the kind's median is 10 min. A
// pod of slow gets 60 min, of few the kind's 10 min, of a Job (another
// kind, no runs) none, and a bare pod the bare pods' class.
func TestHistoryByControllerWithoutLabels(t *testing.T) {
	yes := true
	owned := func(name, kind, owner string) *v1.Pod {
		p := &v1.Pod{}
		p.Name, p.Namespace, p.UID = name, "ns", types.UID(name)
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: owner, Controller: &yes}}
		}
		return p
	}
	h := NewHistory()
	for i := range 3 * minClass {
		h.Observe(owned(fmt.Sprint("f", i), "ReplicaSet", "fast"), 10*time.Minute)
	}
	for i := range minClass {
		h.Observe(owned(fmt.Sprint("s", i), "ReplicaSet", "slow"), 60*time.Minute)
	}
	h.Observe(owned("w0", "ReplicaSet", "few"), 5*time.Minute)
	h.Observe(owned("w1", "ReplicaSet", "few"), 5*time.Minute)
	for i := range 3 {
		h.Observe(owned(fmt.Sprint("b", i), "", ""), 2*time.Minute)
	}
	for _, c := range []struct {
		name string
		pod  *v1.Pod
		want time.Duration
		ok   bool
		kind string
	}{
		{"its controller's runs", owned("p", "ReplicaSet", "slow"), 60 * time.Minute, true, "owner ReplicaSet in ns: slow"},
		{"too few: its owner kind's", owned("p", "ReplicaSet", "few"), 10 * time.Minute, true, "owner ReplicaSet in ns: few"},
		{"a kind with no runs", owned("p", "Job", "j"), 0, false, "owner Job in ns: j"},
		{"a bare pod", owned("p", "", ""), 2 * time.Minute, true, "owner none in ns"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d, ok := h.Estimate(c.pod, 0); ok != c.ok || d != c.want {
				t.Errorf("Estimate: got %v %v, want %v %v", d, ok, c.want, c.ok)
			}
			if k := h.Kind(c.pod); k != c.kind {
				t.Errorf("Kind: got %q, want %q", k, c.kind)
			}
		})
	}
}

// TestKaplanMeierExponentialTail: one run finished at 10 min and nine
// still going at 60 min: S falls to 0.9 at 10 min and no lower, so the
// median lies beyond the data. TailLongest gives the longest run, 60
// min; TailExponential continues S at the hazard −ln 0.9 per 10 min, so
// the median is 10·ln 0.5 ÷ ln 0.9 = 65.79 min, and the 0.05-quantile,
// which S reaches, is still the finished run's 10 min. After 5 min run,
// S conditioned falls to 0.9 in 5 min: half as long, 32.9 min.
func TestKaplanMeierExponentialTail(t *testing.T) {
	h := NewHistory("team")
	h.Observe(teamPod("f"), 10*time.Minute)
	for range 9 {
		h.ObserveRunning(teamPod("r"), 60*time.Minute)
	}
	p := teamPod("p")
	if d, ok := h.Estimate(p, 0); !ok || d != 60*time.Minute {
		t.Errorf("TailLongest: got %v %v, want 60m", d, ok)
	}
	h.Tail = TailExponential
	near := func(d, want time.Duration) bool { return (d - want).Abs() < time.Second }
	median := time.Duration(float64(10*time.Minute) * math.Log(0.5) / math.Log(0.9))
	if d, ok := h.Estimate(p, 0); !ok || !near(d, median) {
		t.Errorf("TailExponential: got %v %v, want %v", d, ok, median)
	}
	if d, ok := h.Quantile(p, 0, 0.05); !ok || d != 10*time.Minute {
		t.Errorf("TailExponential, 0.05-quantile: got %v %v, want 10m", d, ok)
	}
	if d, ok := h.Estimate(p, 5*time.Minute); !ok || !near(d, median/2) {
		t.Errorf("TailExponential after 5m: got %v %v, want %v", d, ok, median/2)
	}
	for _, s := range []string{"", "longest", "exponential", "weibull"} {
		tail, err := ParseHistoryTail(s)
		if (err != nil) != (s == "weibull") {
			t.Errorf("ParseHistoryTail(%q): %q %v", s, tail, err)
		}
	}
}
