package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func whatIfState() *ForecastState {
	st := testState()
	st.Namespaces = []*v1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}
	return st
}

func whatIfPod(t *testing.T, yaml string) *WhatIfInput {
	t.Helper()
	in, err := ParseWhatIf([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

const podYAML = `apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  priority: %d
  containers: [{name: app, image: x, resources: {requests: {cpu: "%s"}}}]
`

func TestWhatIfFitsNowAndWhere(t *testing.T) {
	st := whatIfState()
	st.Nodes = append(st.Nodes, newCluster().makeNodes(NodeGroup{Name: "m", Count: 1, Capacity: map[string]string{"cpu": "2"}})...)
	w, err := RunWhatIf(&Scenario{Name: "t", Seed: 1}, st, whatIfPod(t, fmt.Sprintf(podYAML, "w", 0, "1")), ForecastOptions{Horizon: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p := w.Pods[0]
	if !p.FitsNow || p.Node != "m-0" || len(p.Preempts) != 0 || !p.Forecast.Starts || p.Forecast.Wait > time.Second {
		t.Errorf("got %+v, want it to fit now on m-0 and start at once", p)
	}
	if len(w.Changed) != 0 {
		t.Errorf("changed %+v, want none: it takes no room the others need", w.Changed)
	}
}

func TestWhatIfPreemptsAndDelaysOthers(t *testing.T) {
	sc := &Scenario{Name: "t", Seed: 1, Scheduler: SchedulerSpec{Preemption: &PreemptionSpec{}}}
	w, err := RunWhatIf(sc, whatIfState(), whatIfPod(t, fmt.Sprintf(podYAML, "w", 100, "4")), ForecastOptions{Horizon: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p := w.Pods[0]
	if p.FitsNow || p.Node == "" || len(p.Preempts) != 1 {
		t.Errorf("got %+v, want no room now and one victim", p)
	}
	if len(w.Changed) == 0 {
		t.Errorf("no pending pod's forecast changed; a pod of higher priority taking a node must move b's")
	}
}

func TestWhatIfWaitsBehindTheQueue(t *testing.T) {
	w, err := RunWhatIf(&Scenario{Name: "t", Seed: 1}, whatIfState(), whatIfPod(t, fmt.Sprintf(podYAML, "w", 100, "4")), ForecastOptions{Horizon: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p := w.Pods[0]
	if p.FitsNow || p.Node != "" || !p.Forecast.Starts || p.Forecast.Wait < 50*time.Minute || p.Forecast.Wait > 51*time.Minute {
		t.Errorf("got %+v, want no room now and a start when a ends, ahead of b", p)
	}
	b := types.NamespacedName{Namespace: "default", Name: "b"}
	// w declares no runtime: it runs until unknown, and b, which started
	// when a ended, no longer starts within the horizon.
	if len(w.Changed) != 2 || w.Changed[0].Pod != b || !w.Changed[0].Before.Starts || w.Changed[0].After.Starts {
		t.Errorf("changed %+v, want b (then c) to start before and not after", w.Changed)
	}
}

// TestWhatIfSaysWhyNotNow: a pod that does not fit now is answered with
// its cycle's reason, whether one cycle answers (one plain pod) or a run
// of the added pods alone does (two pods); a pod that fits has none.
func TestWhatIfSaysWhyNotNow(t *testing.T) {
	two := fmt.Sprintf(podYAML, "w", 100, "4") + "---\n" + fmt.Sprintf(podYAML, "v", 100, "4")
	for _, tc := range []struct {
		name, yaml string
		pods       int
	}{
		{"one pod: one cycle answers", fmt.Sprintf(podYAML, "w", 100, "4"), 1},
		{"two pods: a run answers", two, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := RunWhatIf(&Scenario{Name: "t", Seed: 1}, whatIfState(), whatIfPod(t, tc.yaml), ForecastOptions{Horizon: 3 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Pods) != tc.pods {
				t.Fatalf("%d answers, want %d", len(w.Pods), tc.pods)
			}
			for _, p := range w.Pods {
				if p.FitsNow || !strings.Contains(p.Reason, "Insufficient cpu") {
					t.Errorf("%s: fits %v, reason %q: want no room now, for lack of CPU", p.Pod, p.FitsNow, p.Reason)
				}
			}
		})
	}
	st := whatIfState()
	st.Nodes = append(st.Nodes, newCluster().makeNodes(NodeGroup{Name: "m", Count: 1, Capacity: map[string]string{"cpu": "2"}})...)
	w, err := RunWhatIf(&Scenario{Name: "t", Seed: 1}, st, whatIfPod(t, fmt.Sprintf(podYAML, "w", 0, "1")), ForecastOptions{Horizon: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if p := w.Pods[0]; !p.FitsNow || p.Reason != "" {
		t.Errorf("a pod that fits: %+v, want no reason", p)
	}
}

func TestWhatIfBadInput(t *testing.T) {
	sc := &Scenario{Name: "t", Seed: 1}
	big := strings.Repeat(fmt.Sprintf(podYAML, "p", 0, "1")+"---\n", MaxWhatIfObjects+1)
	for _, c := range []struct{ name, yaml, want string }{
		{"not yaml", "kind: [", "document 1"},
		{"other kind", "apiVersion: v1\nkind: Node\nmetadata: {name: node1}\n", "not a Pod or a PodGroup"},
		// A PodGroup of a version the scheme does not know: the version,
		// not the kind, is what a what-if does not take.
		{"NaN", "apiVersion: v1\nkind: Pod\nmetadata: {name: u}\nspec:\n  priority: .nan\n  containers: [{name: c, image: x}]\n",
			"document 1: Pod u: line 5: spec.priority: .nan is not a finite number"},
		{"PodGroup of another version", "apiVersion: scheduling.k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g}\n",
			"document 1: PodGroup g: apiVersion scheduling.k8s.io/v1alpha1: a what-if takes PodGroup as scheduling.k8s.io/v1beta1"},
		{"empty", "# nothing\n", "no Pod or PodGroup"},
		{"too many", big, "limit of 1000 objects"},
		{"too large", strings.Repeat("#", MaxWhatIfBytes+1), "limit of"},
	} {
		if _, err := ParseWhatIf([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"missing namespace", strings.Replace(fmt.Sprintf(podYAML, "w", 0, "1"), "{name: w}", "{name: w, namespace: nope}", 1), `namespace "nope" does not exist`},
		{"missing PodGroup", strings.Replace(fmt.Sprintf(podYAML, "w", 0, "1"), "spec:\n", "spec:\n  schedulingGroup: {podGroupName: g}\n", 1), "PodGroup default/g does not exist"},
		{"name taken", fmt.Sprintf(podYAML, "b", 0, "1"), "exists already"},
		{"succeeded", fmt.Sprintf(podYAML, "w", 0, "1") + "status: {phase: Succeeded}\n", "pod default/w: status.phase Succeeded; a what-if pod is one not yet scheduled"},
		{"pod name the API server refuses", fmt.Sprintf(podYAML, `"W W"`, 0, "1"), "pod default/W W: the name is not one the API server takes: a lowercase RFC 1123 subdomain"},
		{"PodGroup name the API server refuses", "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: G_1}\nspec: {schedulingPolicy: {gang: {minCount: 1}}}\n---\n" + fmt.Sprintf(podYAML, "w", 0, "1"),
			"PodGroup default/G_1: the name is not one the API server takes"},
		{"running", fmt.Sprintf(podYAML, "w", 0, "1") + "status: {phase: Running}\n", "pod default/w: status.phase Running"},
		{"being deleted", strings.Replace(fmt.Sprintf(podYAML, "w", 0, "1"), "{name: w}", "{name: w, deletionTimestamp: \"2026-01-01T00:00:00Z\"}", 1),
			"pod default/w: has a deletionTimestamp"},
		// As a snapshot's pod: the API server refuses it, and placed it
		// would be said not to fit for ever rather than refused.
		{"negative request", fmt.Sprintf(podYAML, "w", 0, "-1"), "pod default/w: containers app requests cpu must not be negative, got -1"},
		{"bad runtime", strings.Replace(fmt.Sprintf(podYAML, "w", 0, "1"), "{name: w}", "{name: w, annotations: {schedq.io/expected-runtime: soon}}", 1), "not a positive duration"},
		{"other scheduler", strings.Replace(fmt.Sprintf(podYAML, "w", 0, "1"), "spec:\n", "spec:\n  schedulerName: other\n", 1),
			`pod default/w: schedulerName "other" is not one of the scheduler's profiles ("schedq", "default-scheduler")`},
	} {
		in := whatIfPod(t, c.yaml)
		if _, err := RunWhatIf(sc, whatIfState(), in, ForecastOptions{Horizon: time.Hour}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	for _, name := range []string{"", v1.DefaultSchedulerName, SchedulerName} { // the default profile, and those taken over
		in := whatIfPod(t, strings.Replace(fmt.Sprintf(podYAML, "w", 0, "1"), "spec:\n", "spec:\n  schedulerName: \""+name+"\"\n", 1))
		st := whatIfState()
		st.Nodes = append(st.Nodes, newCluster().makeNodes(NodeGroup{Name: "m", Count: 1, Capacity: map[string]string{"cpu": "2"}})...)
		if w, err := RunWhatIf(sc, st, in, ForecastOptions{Horizon: time.Hour}); err != nil || !w.Pods[0].FitsNow {
			t.Errorf("schedulerName %q: got %+v, %v; want it to fit now", name, w, err)
		}
	}
	if _, err := RunWhatIf(sc, whatIfState(), whatIfPod(t, fmt.Sprintf(podYAML, "w", 0, "1")), ForecastOptions{}); err == nil || !strings.Contains(err.Error(), "horizon") {
		t.Errorf("no horizon: got %v", err)
	}
}

// TestWhatIfPreemptsOnlyItsVictims: a what-if pod's victims are the
// running pods its run evicts, not every pod gone or terminating on the
// node it lands on. A pod that was already terminating at the state's
// instant (a deletion in its grace period) is nobody's victim, and a pod
// that lands beside it without evicting anyone fits now.
func TestWhatIfPreemptsOnlyItsVictims(t *testing.T) {
	leaving := func(st *ForecastState) {
		st.Nodes = append(st.Nodes, newCluster().makeNodes(NodeGroup{Name: "m", Count: 1, Capacity: map[string]string{"cpu": "2"}})...)
		gone := testPod("gone", "m-0", "1", "")
		gone.DeletionTimestamp = &metav1.Time{Time: st.Now.Add(20 * time.Second)}
		secs := int64(30)
		gone.DeletionGracePeriodSeconds = &secs
		st.Running = append(st.Running, RunningPod{Pod: gone, Started: st.Now.Add(-time.Hour)})
	}
	for _, tc := range []struct {
		name     string
		yaml     string
		fitsNow  bool
		node     string
		preempts []string
	}{
		{name: "beside a pod already terminating", yaml: fmt.Sprintf(podYAML, "w", 0, "1"),
			fitsNow: true, node: "m-0"},
		{name: "two pods, one beside it, one preempting elsewhere",
			yaml:    fmt.Sprintf(podYAML, "w", 0, "1") + "---\n" + fmt.Sprintf(podYAML, "x", 100, "4"),
			fitsNow: true, node: "m-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := whatIfState()
			leaving(st)
			sc := &Scenario{Name: "t", Seed: 1, Scheduler: SchedulerSpec{Preemption: &PreemptionSpec{PodGracePeriods: true}}}
			w, err := RunWhatIf(sc, st, whatIfPod(t, tc.yaml), ForecastOptions{Horizon: 3 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			p := w.Pods[0]
			var got []string
			for _, v := range p.Preempts {
				got = append(got, v.Name)
			}
			if p.FitsNow != tc.fitsNow || p.Node != tc.node || fmt.Sprint(got) != fmt.Sprint(tc.preempts) {
				t.Errorf("w: fits now %v on %q preempting %v; want %v on %q preempting %v", p.FitsNow, p.Node, got, tc.fitsNow, tc.node, tc.preempts)
			}
		})
	}
}

// TestWhatIfVictimsAreEachPreemptorsOwn: of two what-if pods on one node,
// the one that fits at once preempts no one, and the other preempts the
// pod it evicts there: the victims are not every pod evicted from the
// node, whichever pod evicted them.
func TestWhatIfVictimsAreEachPreemptorsOwn(t *testing.T) {
	yaml := fmt.Sprintf(podYAML, "w", 200, "1") + "---\n" + fmt.Sprintf(podYAML, "x", 100, "4")
	w := whatIfBesideLow(t, yaml)
	want := map[string]string{
		"w": "fits now true on k-0 preempting []",
		"x": "fits now false on k-0 preempting [low]",
	}
	checkFitsAndVictims(t, w, want)
}

// TestWhatIfFitsNowOnlyWithoutWaiting: an added pod that binds only once
// another added pod's victims have left does not fit now, though it
// preempts no one: on k-0 (5 cores, low running on 4), x (priority 100, 4
// cores) preempts low, and w (priority 0, 1 core), which the room
// nominated to x keeps out, binds after low's grace period.
func TestWhatIfFitsNowOnlyWithoutWaiting(t *testing.T) {
	yaml := fmt.Sprintf(podYAML, "x", 100, "4") + "---\n" + fmt.Sprintf(podYAML, "w", 0, "1")
	w := whatIfBesideLow(t, yaml)
	want := map[string]string{
		"x": "fits now false on k-0 preempting [low]",
		"w": "fits now false on k-0 preempting []",
	}
	checkFitsAndVictims(t, w, want)
	for _, p := range w.Pods {
		if p.Pod.Name == "w" && !strings.Contains(p.Reason, "Insufficient cpu") {
			t.Errorf("w: reason %q, want its failed cycle's (Insufficient cpu)", p.Reason)
		}
	}
}

// whatIfBesideLow runs a what-if of the pods in yaml on one node, k-0 (5
// cores), where the pod low (priority 0) has run on 4 cores for an hour,
// with preemption and grace periods on and a horizon of 3 h.
func whatIfBesideLow(t *testing.T, yaml string) *WhatIf {
	t.Helper()
	now := epoch.Add(10 * time.Hour)
	st := &ForecastState{
		Now:        now,
		Namespaces: []*v1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "default"}}},
		Nodes:      newCluster().makeNodes(NodeGroup{Name: "k", Count: 1, Capacity: map[string]string{"cpu": "5", "memory": "8Gi"}}),
		Running:    []RunningPod{{Pod: testPod("low", "k-0", "4", ""), Started: now.Add(-time.Hour)}},
	}
	sc := &Scenario{Name: "t", Seed: 1, Scheduler: SchedulerSpec{Preemption: &PreemptionSpec{PodGracePeriods: true}}}
	w, err := RunWhatIf(sc, st, whatIfPod(t, yaml), ForecastOptions{Horizon: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// checkFitsAndVictims checks fitsAndVictims of each of w's pods against
// want, by the pod's name.
func checkFitsAndVictims(t *testing.T, w *WhatIf, want map[string]string) {
	t.Helper()
	for _, p := range w.Pods {
		if got := fitsAndVictims(p); got != want[p.Pod.Name] {
			t.Errorf("%s: %s; want %s", p.Pod.Name, got, want[p.Pod.Name])
		}
	}
}

// fitsAndVictims is whether p fits now, where and whom it preempts, as
// one line.
func fitsAndVictims(p WhatIfPod) string {
	var names []string
	for _, v := range p.Preempts {
		names = append(names, v.Name)
	}
	return fmt.Sprintf("fits now %v on %s preempting %v", p.FitsNow, p.Node, names)
}

// TestWhatIfFitsNowIgnoresThePodsAhead: "fits now" is whether a node has
// room for the pod on the cluster as it is (docs/forecast.md, WhatIfPod):
// the pods pending ahead of it are not counted, and its predicted start
// says when it gets the room. Here b, pending ahead of w, takes the only
// free node, m-0, first: w fits now on m-0, and is predicted to start
// later, once room is free again. So whether one cycle answers (one plain
// pod) or a run of the added pods alone (two pods).
func TestWhatIfFitsNowIgnoresThePodsAhead(t *testing.T) {
	w := fmt.Sprintf(podYAML, "w", 0, "4")
	for _, tc := range []struct{ name, yaml string }{
		{"one cycle", w},
		{"a run of the added pods alone", w + "---\n" + fmt.Sprintf(podYAML, "v", 0, "100m")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := whatIfState()
			st.Nodes = append(st.Nodes, newCluster().makeNodes(NodeGroup{Name: "m", Count: 1, Capacity: map[string]string{"cpu": "4", "memory": "8Gi"}})...)
			x, err := RunWhatIf(&Scenario{Name: "t", Seed: 1}, st, whatIfPod(t, tc.yaml), ForecastOptions{Horizon: 3 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			p := x.Pods[0]
			if !p.FitsNow || p.Node != "m-0" || !p.Forecast.Starts || p.Forecast.Wait < 30*time.Minute {
				t.Errorf("got %+v, want it to fit now on m-0 and start once b, ahead of it there, has ended (30m or later)", p)
			}
		})
	}
}
