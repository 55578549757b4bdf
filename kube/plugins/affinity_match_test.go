package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

const zoneKey = "topology.kubernetes.io/zone"

// mkPod returns a pod "default/name" with UID name, changed by edits.
func mkPod(name string, edits ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)}}
	for _, e := range edits {
		e(p)
	}
	return p
}

func podLabels(kv ...string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Labels = kvMap(kv...) }
}

func inNamespace(ns string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Namespace = ns }
}

func kvMap(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// term is a required pod (anti-)affinity term selecting labels kv in the
// pod's own namespace.
func term(topologyKey string, kv ...string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: kvMap(kv...)}, TopologyKey: topologyKey}
}

func withAffinity(terms ...v1.PodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

func withAntiAffinity(terms ...v1.PodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

func TestMatchesRequiredAffinity(t *testing.T) {
	queued := mkPod("p", withAffinity(term(zoneKey, "app", "web"), term(zoneKey, "tier", "front")))
	team := mkPod("p", withAffinity(term(zoneKey, "app", "web")), func(p *v1.Pod) {
		p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}
	})
	broken := mkPod("p", withAffinity(v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}},
		TopologyKey:   zoneKey,
	}))
	for _, tc := range []struct {
		name     string
		queued   *v1.Pod
		assigned *v1.Pod
		ns       labels.Set
		want     bool
	}{
		{"matches one term", queued, mkPod("a", podLabels("app", "web")), nil, true},
		{"matches the other term", queued, mkPod("a", podLabels("tier", "front")), nil, true},
		{"matches no term", queued, mkPod("a", podLabels("app", "db")), nil, false},
		{"other namespace", queued, mkPod("a", podLabels("app", "web"), inNamespace("x")), nil, false},
		{"namespace selected by labels", team, mkPod("a", podLabels("app", "web"), inNamespace("x")), labels.Set{"team": "blue"}, true},
		{"namespace not selected", team, mkPod("a", podLabels("app", "web"), inNamespace("x")), labels.Set{"team": "red"}, false},
		{"no affinity", mkPod("p", withAntiAffinity(term(zoneKey, "app", "web"))), mkPod("a", podLabels("app", "web")), nil, false},
		{"terms that do not parse", broken, mkPod("a", podLabels("app", "web")), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchesRequiredAffinity(tc.queued, tc.assigned, tc.ns); got != tc.want {
				t.Fatalf("MatchesRequiredAffinity = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGangHintsRejectForeignObjects feeds GangScheduling's hints objects
// of the wrong kind: each must answer Queue with an error, which the
// queue counts as Queue.
func TestGangHintsRejectForeignObjects(t *testing.T) {
	for _, reg := range (GangScheduling{}).EventsToRegister() {
		t.Run(reg.Event.Label, func(t *testing.T) {
			h, err := reg.Fn(mkPod("p"), "old", "new")
			if err == nil || h != schedq.HintQueue {
				t.Fatalf("hint = %v, %v; want Queue and an error", h, err)
			}
		})
	}
}
