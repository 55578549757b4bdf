package scheduler

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/plugins"
)

// TestAssignedPodAddWakesTheRejectedPod: with the handlers' targeted move
// on (AffinityMatch, as the app and the simulator set it), a pod bound
// elsewhere wakes the parked pods whose rejecting plugins' hints accept
// it, as kube-scheduler v1.37.2 wakes them: those waiting for a pod their
// required affinity names, and also those PodTopologySpread rejected,
// which a matching pod in another domain can let in (the skew is measured
// against the least populated domain).
func TestAssignedPodAddWakesTheRejectedPod(t *testing.T) {
	spread := func(p *v1.Pod) {
		ignore := v1.NodeInclusionPolicyIgnore
		p.Labels = map[string]string{"app": "x"}
		p.Spec.NodeSelector = map[string]string{zoneLabel: "a"}
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: zoneLabel, WhenUnsatisfiable: v1.DoNotSchedule,
			LabelSelector:      &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			NodeAffinityPolicy: &ignore,
		}}
	}
	affinity := func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			TopologyKey:   zoneLabel,
		}}}}
	}
	tests := []struct {
		name    string
		pod     func(*v1.Pod)
		running []*v1.Pod
		plugin  string
		added   *v1.Pod
		woken   bool
	}{
		{
			name: "spread: a matching pod in the other zone", pod: spread,
			running: []*v1.Pod{labelled(runningPod("r1", "na", 100, 0, t0), "app", "x")},
			plugin:  "PodTopologySpread",
			added:   labelled(runningPod("r2", "nb", 100, 0, t0), "app", "x"), woken: true,
		},
		{
			name: "spread: a pod the selector does not match", pod: spread,
			running: []*v1.Pod{labelled(runningPod("r1", "na", 100, 0, t0), "app", "x")},
			plugin:  "PodTopologySpread",
			added:   labelled(runningPod("r2", "nb", 100, 0, t0), "app", "y"),
		},
		{
			name: "affinity: the pod it needs", pod: affinity, plugin: "InterPodAffinity",
			added: labelled(runningPod("db", "na", 100, 0, t0), "app", "db"), woken: true,
		},
		{
			name: "affinity: another pod", pod: affinity, plugin: "InterPodAffinity",
			added: labelled(runningPod("web", "na", 100, 0, t0), "app", "web"),
		},
	}
	hints := testQueueConfig(t).Hints
	for _, tc := range tests {
		for _, known := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/hints known %v", tc.name, known), func(t *testing.T) {
				f := newFWFixture(t, nil, nil)
				f.h.AffinityMatch = plugins.MatchesRequiredAffinity
				if known {
					f.h.Hints = hints // as the app sets them
				}
				f.h.AddNode(zonedNode("na", "a"))
				f.h.AddNode(zonedNode("nb", "b"))
				for _, r := range tc.running {
					f.h.AddPod(r)
				}
				p := pod("p", 100)
				tc.pod(p)
				f.h.AddPod(p)
				f.parkedThenWokenBy(t, "p", tc.plugin, tc.added, tc.woken)
			})
		}
	}
}

// labelled sets p's label k to v and returns p.
func labelled(p *v1.Pod, k, v string) *v1.Pod {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// parkedThenWokenBy runs one attempt, which must leave the pod (or the
// group of the member) name Unschedulable by plugin and parked, then adds
// added and checks that its arrival wakes name or not, as woken says.
func (f *fixture) parkedThenWokenBy(t *testing.T, name, plugin string, added *v1.Pod, woken bool) {
	t.Helper()
	out := f.once()
	if out.Result != Unschedulable || !slices.Contains(out.Plugins, plugin) {
		t.Fatalf("first attempt %v by %v (%s), want Unschedulable by %s", out.Result, out.Plugins, out.Message, plugin)
	}
	if loc := f.where(name); loc != schedq.InUnschedulable {
		t.Fatalf("%s %v after its rejection, want parked", name, loc)
	}
	f.h.AddPod(added)
	if got := f.where(name) != schedq.InUnschedulable; got != woken {
		t.Fatalf("woken %v by %s's arrival (rejected by %v), want %v", got, added.Name, out.Plugins, woken)
	}
}
