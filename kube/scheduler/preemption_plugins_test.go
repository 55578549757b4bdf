package scheduler_test

import (
	"context"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/plugins"
	"github.com/schedq/schedq/kube/scheduler"
)

type recordEvict struct{ victims []string }

func (r *recordEvict) Preempt(_ context.Context, p scheduler.Preemption, done func([]error)) {
	for _, v := range p.Victims {
		r.victims = append(r.victims, v.Name)
	}
	done(nil)
}

// TestPreemptionLiftsAVictimsAntiAffinity: the node has room, but a pod
// of lower priority there forbids the preemptor by its required
// anti-affinity. InterPodAffinity's PreFilter extensions let the search
// see that evicting it helps, with the default plugins.
func TestPreemptionLiftsAVictimsAntiAffinity(t *testing.T) {
	c := scheduler.NewCache()
	c.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"kubernetes.io/hostname": "a"}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110"),
		}}})
	guard := benchPod("guard", 1000, 1)
	guard.Spec.NodeName = "a"
	guard.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: "kubernetes.io/hostname",
	}}}}
	bystander := benchPod("bystander", 1000, 1)
	bystander.Spec.NodeName = "a"
	for _, p := range []*v1.Pod{guard, bystander} {
		if err := c.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	profile := framework.Profile(plugins.Default(plugins.LeastAllocated))
	q, err := schedq.New(scheduler.QueueConfig(profile))
	if err != nil {
		t.Fatal(err)
	}
	s := scheduler.New(q, c, nil, nil, scheduler.Options{Profile: profile, Rand: rand.New(rand.NewPCG(1, 2))})
	ev := &recordEvict{}
	if err := s.EnablePreemption(scheduler.PreemptionOptions{Evictor: ev}); err != nil {
		t.Fatal(err)
	}
	web := benchPod("web", 1000, 100)
	web.Labels = map[string]string{"app": "web"}
	pi, err := framework.NewPodInfo(web)
	if err != nil {
		t.Fatal(err)
	}
	out := s.PlanPreemption(context.Background(), pi)
	if out.Nominated != "a" || len(out.Victims) != 1 || out.Victims[0].Name != "guard" {
		var names []string
		for _, v := range out.Victims {
			names = append(names, v.Name)
		}
		t.Fatalf("nominated %q, victims %v: %s", out.Nominated, names, out.Message)
	}
}
