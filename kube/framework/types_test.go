package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func req(cpu, mem string) v1.ResourceRequirements {
	return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}
}

func TestPodInfoRequests(t *testing.T) {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: v1.PodSpec{
			// Init containers run one at a time before the others: the pod
			// needs the larger of the biggest init container and the sum.
			InitContainers: []v1.Container{{Name: "i", Resources: req("3", "1Gi")}},
			Containers:     []v1.Container{{Name: "a", Resources: req("1", "1Gi")}, {Name: "b", Resources: req("1", "2Gi")}},
			Overhead:       v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
		},
	}
	pi, err := NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	if pi.Requests.MilliCPU != 3100 || pi.Requests.Memory != 3<<30 || pi.Requests.Pods != 1 {
		t.Fatalf("requests %+v", pi.Requests)
	}
}

func TestPodInfoAffinity(t *testing.T) {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: v1.PodSpec{Affinity: &v1.Affinity{PodAffinity: &v1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: "zone",
			}},
		}}},
	}
	pi, err := NewPodInfo(p)
	if err != nil || len(pi.RequiredAffinity) != 1 {
		t.Fatalf("%v %+v", err, pi)
	}
	db := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{"app": "db"}}}
	elsewhere := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Labels: map[string]string{"app": "db"}}}
	if !pi.RequiredAffinity[0].Matches(db, labels.Set{}) || pi.RequiredAffinity[0].Matches(elsewhere, labels.Set{}) {
		t.Fatal("a term without namespaces must select the pod's own namespace only")
	}
	p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchExpressions =
		[]metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}
	if _, err := NewPodInfo(p); err == nil {
		t.Fatal("a malformed selector must be an error")
	}
}

func TestNodeInfoAccounting(t *testing.T) {
	n := NewNodeInfo(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("4"), "example.com/gpu": resource.MustParse("2"),
	}}})
	if n.Allocatable.MilliCPU != 4000 || n.Allocatable.Scalar["example.com/gpu"] != 2 {
		t.Fatalf("allocatable %+v", n.Allocatable)
	}
	a, _ := NewPodInfo(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Spec: v1.PodSpec{Containers: []v1.Container{{Resources: req("1", "1Gi")}}}})
	b, _ := NewPodInfo(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}, Spec: v1.PodSpec{Containers: []v1.Container{{Resources: req("2", "1Gi")}}}})
	n.AddPod(a)
	n.AddPod(b)
	if !n.RemovePod(Key(a.Pod)) || n.RemovePod(Key(a.Pod)) {
		t.Fatal("RemovePod")
	}
	if n.Requested.MilliCPU != 2000 || n.Requested.Pods != 1 || len(n.Pods) != 1 {
		t.Fatalf("requested %+v after removing a", n.Requested)
	}
}
