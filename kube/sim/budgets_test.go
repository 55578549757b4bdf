package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// budgetSnapshot: two full nodes, low (priority 0, app=db) on n1 and mid
// (priority 5) on n2, and urgent (priority 100) pending for a whole node.
// Without a budget DefaultPreemption takes low, the lowest victim; a
// budget that protects low makes it take mid instead. (The snapshot's
// bound pods have no records: the victim shows by its priority.)
const budgetSnapshot = `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}, conditions: [{type: Ready, status: "True"}]}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}, conditions: [{type: Ready, status: "True"}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: low, namespace: shop, labels: {app: db}}, spec: {nodeName: n1, priority: 0, containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]}, status: {phase: Running}}
- {apiVersion: v1, kind: Pod, metadata: {name: mid, namespace: shop, labels: {app: web}}, spec: {nodeName: n2, priority: 5, containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]}, status: {phase: Running}}
- {apiVersion: v1, kind: Pod, metadata: {name: urgent, namespace: shop}, spec: {priority: 100, containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]}}
`

// TestSnapshotBudgetsGuidePreemption: a snapshot's PodDisruptionBudgets
// reach DefaultPreemption, with the status the disruption controller
// would give them, and it spares the pods they protect where it can.
func TestSnapshotBudgetsGuidePreemption(t *testing.T) {
	for _, tc := range []struct {
		name, budget   string
		victimPriority int32
	}{
		{name: "no budget", victimPriority: 0},
		{name: "a budget protects low", budget: "- {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: db, namespace: shop}, spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}}\n", victimPriority: 5},
		{name: "a budget that allows it", budget: "- {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: db, namespace: shop}, spec: {maxUnavailable: 1, selector: {matchLabels: {app: db}}}}\n", victimPriority: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, preemptingSnapshot(t, budgetSnapshot+tc.budget))
			var victims []int32
			for _, c := range r.Preemption.ByPriority {
				for range c.Victims {
					victims = append(victims, c.Priority)
				}
			}
			if len(victims) != 1 || victims[0] != tc.victimPriority {
				t.Errorf("victims of priorities %v, want one of %d", victims, tc.victimPriority)
			}
			if want := strings.Count(tc.budget, "PodDisruptionBudget"); r.Snapshot.Budgets != want {
				t.Errorf("summary counts %d budgets, want %d", r.Snapshot.Budgets, want)
			}
		})
	}
}

// TestBudgetStatus: the status is the disruption controller's, over the
// pods the budget selects in its namespace.
func TestBudgetStatus(t *testing.T) {
	pod := func(name, ns, app, node string, terminating bool) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}}, Spec: v1.PodSpec{NodeName: node}}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}
		return p
	}
	pods := []*v1.Pod{
		pod("a", "shop", "db", "n1", false), pod("b", "shop", "db", "n2", false), pod("c", "shop", "db", "n3", false),
		pod("d", "shop", "db", "n3", true), pod("e", "shop", "db", "", false), // terminating, pending: expected, not healthy
		pod("f", "other", "db", "n1", false), pod("g", "shop", "web", "n1", false), // not selected
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	n, pct := intstr.FromInt32(2), intstr.FromString("50%")
	for _, tc := range []struct {
		name string
		spec policyv1.PodDisruptionBudgetSpec
		want policyv1.PodDisruptionBudgetStatus
	}{
		{"minAvailable", policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: &n},
			policyv1.PodDisruptionBudgetStatus{ExpectedPods: 5, CurrentHealthy: 3, DesiredHealthy: 2, DisruptionsAllowed: 1}},
		{"minAvailable percent, rounded up", policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: &pct},
			policyv1.PodDisruptionBudgetStatus{ExpectedPods: 5, CurrentHealthy: 3, DesiredHealthy: 3, DisruptionsAllowed: 0}},
		{"maxUnavailable", policyv1.PodDisruptionBudgetSpec{Selector: sel, MaxUnavailable: &n},
			policyv1.PodDisruptionBudgetStatus{ExpectedPods: 5, CurrentHealthy: 3, DesiredHealthy: 3, DisruptionsAllowed: 0}},
		{"maxUnavailable percent, rounded up", policyv1.PodDisruptionBudgetSpec{Selector: sel, MaxUnavailable: &pct},
			policyv1.PodDisruptionBudgetStatus{ExpectedPods: 5, CurrentHealthy: 3, DesiredHealthy: 2, DisruptionsAllowed: 1}},
		{"empty selector selects none", policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{}, MinAvailable: &n},
			policyv1.PodDisruptionBudgetStatus{DesiredHealthy: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Spec: tc.spec}
			if got := budgetStatus(b, pods, func(*v1.Pod) bool { return false }); got.ExpectedPods != tc.want.ExpectedPods || got.CurrentHealthy != tc.want.CurrentHealthy ||
				got.DesiredHealthy != tc.want.DesiredHealthy || got.DisruptionsAllowed != tc.want.DisruptionsAllowed {
				t.Errorf("status %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestBudgetStatusCountsReadyPods: a bound pod is healthy as the
// disruption controller counts it, when its Ready condition is True. A
// live pod just bound (PodScheduled, no Ready yet) is not; before, it
// counted, and a forecast or what-if could evict a pod its budget
// protects. The simulator's own pods never get the condition and count:
// those it bound, and those a scenario or hand-written snapshot gives
// bound with no condition at all.
func TestBudgetStatusCountsReadyPods(t *testing.T) {
	cond := func(typ v1.PodConditionType, st v1.ConditionStatus) v1.PodCondition {
		return v1.PodCondition{Type: typ, Status: st}
	}
	for _, tc := range []struct {
		name      string
		conds     []v1.PodCondition
		boundHere bool
		healthy   bool
	}{
		{name: "no condition, from the input", healthy: true},
		{name: "just bound, live", conds: []v1.PodCondition{cond(v1.PodScheduled, v1.ConditionTrue)}},
		{name: "ready", conds: []v1.PodCondition{cond(v1.PodScheduled, v1.ConditionTrue), cond(v1.PodReady, v1.ConditionTrue)}, healthy: true},
		{name: "not ready", conds: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse)}},
		{name: "bound by the simulator after failed attempts", conds: []v1.PodCondition{cond(v1.PodScheduled, v1.ConditionFalse)}, boundHere: true, healthy: true},
		{name: "bound by the simulator, not ready", conds: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse)}, boundHere: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "shop", Labels: map[string]string{"app": "db"}},
				Spec: v1.PodSpec{NodeName: "n1"}, Status: v1.PodStatus{Conditions: tc.conds}}
			n := intstr.FromInt32(0)
			b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
				Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, MinAvailable: &n}}
			got := budgetStatus(b, []*v1.Pod{p}, func(q *v1.Pod) bool { return q == p && tc.boundHere })
			want := int32(0)
			if tc.healthy {
				want = 1
			}
			if got.ExpectedPods != 1 || got.CurrentHealthy != want || got.DisruptionsAllowed != want {
				t.Errorf("status %+v, want 1 expected, %d healthy and allowed", got, want)
			}
		})
	}
}

// TestWhatIfRespectsSnapshotBudgets: a what-if forked from a replay of a
// snapshot preempts as the replay would, sparing the pod a budget
// protects.
func TestWhatIfRespectsSnapshotBudgets(t *testing.T) {
	snap := strings.Replace(budgetSnapshot, "- {apiVersion: v1, kind: Pod, metadata: {name: urgent", "# - urgent", 1) +
		"- {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: db, namespace: shop}, spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}}\n"
	sc := preemptingSnapshot(t, snap)
	rp, err := NewReplay(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := rp.Until(0); err != nil {
		t.Fatal(err)
	}
	in, err := ParseWhatIf([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: urgent, namespace: shop}\nspec: {priority: 100, containers: [{name: c, image: x, resources: {requests: {cpu: \"2\"}}}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := RunWhatIf(sc, rp.State(), in, ForecastOptions{Horizon: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if p := w.Pods[0]; p.Node != "n2" || len(p.Preempts) != 1 || p.Preempts[0].Name != "mid" {
		t.Errorf("urgent: node %q preempting %v; want n2 by preempting shop/mid", p.Node, p.Preempts)
	}
}

// TestWhatIfBudgetCountsOnlyReadyPodsHealthy: a budget's healthy pods
// are those ready, as the disruption controller counts them: with
// minAvailable 1 over db-a (ready) and db-b (running, not ready), none
// may be disrupted, so a what-if pod of priority 100 preempts web (of
// priority 10, no budget) rather than db-a (of priority 0), as the
// scheduler would. Counted healthy, db-b let the what-if take db-a.
func TestWhatIfBudgetCountsOnlyReadyPodsHealthy(t *testing.T) {
	ready := func(p *v1.Pod, s v1.ConditionStatus) *v1.Pod {
		p.Labels = map[string]string{"app": "db"}
		p.Status.Phase = v1.PodRunning
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: s}}
		return p
	}
	prio := func(p *v1.Pod, n int32) *v1.Pod { p.Spec.Priority = &n; return p }
	for _, tc := range []struct {
		name   string
		dbB    v1.ConditionStatus
		victim string
	}{
		{name: "db-b not ready: no disruption allowed", dbB: v1.ConditionFalse, victim: "web"},
		{name: "db-b ready: one allowed", dbB: v1.ConditionTrue, victim: "db-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := epoch.Add(time.Hour)
			st := &ForecastState{Now: now,
				Namespaces: []*v1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "default"}}},
				Nodes:      newCluster().makeNodes(NodeGroup{Name: "n", Count: 3, Capacity: map[string]string{"cpu": "1", "memory": "8Gi"}}),
				Running: []RunningPod{
					{Pod: ready(testPod("db-a", "n-0", "1", ""), v1.ConditionTrue), Started: now},
					{Pod: prio(testPod("web", "n-1", "1", ""), 10), Started: now},
					{Pod: prio(ready(testPod("db-b", "n-2", "1", ""), tc.dbB), 200), Started: now},
				},
				Budgets: []*policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
					Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &intstr.IntOrString{IntVal: 1},
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}},
			}
			sc := &Scenario{Name: "t", Seed: 1, Scheduler: SchedulerSpec{Preemption: &PreemptionSpec{PodGracePeriods: true}}}
			w, err := RunWhatIf(sc, st, whatIfPod(t, fmt.Sprintf(podYAML, "w", 100, "1")), ForecastOptions{Horizon: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if p := w.Pods[0]; len(p.Preempts) != 1 || p.Preempts[0].Name != tc.victim {
				t.Errorf("w preempts %v on %s, want %s", p.Preempts, p.Node, tc.victim)
			}
		})
	}
}

// preemptingSnapshot is the scenario of a snapshot file holding yaml,
// with preemption on.
func preemptingSnapshot(t *testing.T, yaml string) *Scenario {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	sc := snapshotScenario(path)
	sc.Scheduler.Preemption = &PreemptionSpec{}
	return sc
}
