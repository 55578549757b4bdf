package scheduler

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestFrameworkBatchTellsScoresApart: the framework's signature counts a
// pod's requests as NodeResourcesFit's Filter does, yet its Score counts
// a container that requests no CPU or memory as one of 100m and 200Mi. A
// pod of one container of 1 CPU with 30 idle ones beside it, or with 30
// idle sidecars (whose requests add up with the containers', where plain
// init containers' are reused by them), has the signature of the pod
// without (with 30 plain init containers), and not its scores. The
// default profile's pods that nothing selects are batched by schedq
// alone (kube-scheduler signs none while PodTopologySpread has default
// constraints): after the first pod's batch, the second must go where
// scoring every node sends it, not to the first's next best node.
func TestFrameworkBatchTellsScoresApart(t *testing.T) {
	idle := func(prefix string, restart *v1.ContainerRestartPolicy) []v1.Container {
		var cs []v1.Container
		for i := range 30 {
			cs = append(cs, v1.Container{Name: fmt.Sprint(prefix, i), RestartPolicy: restart})
		}
		return cs
	}
	always := v1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name        string
		first, then func(p *v1.Pod)
	}{
		{"idle containers beside",
			func(*v1.Pod) {},
			func(p *v1.Pod) { p.Spec.Containers = append(p.Spec.Containers, idle("idle", nil)...) }},
		{"idle sidecars, not plain init containers",
			func(p *v1.Pod) { p.Spec.InitContainers = idle("init", nil) },
			func(p *v1.Pod) { p.Spec.InitContainers = idle("init", &always) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			place := func(batched bool) (string, uint64) {
				f, now := batchFixture(t, 0)
				// A pod of 1 CPU and 200Mi (as scored) prefers wide,
				// then small, then tall; one of 4 CPUs and 6.2Gi (its
				// idle containers or sidecars, as scored) prefers tall.
				for _, n := range []struct{ name, cpu, mem string }{
					{"wide", "8", "4Gi"}, {"small", "4", "2Gi"}, {"tall", "2", "32Gi"},
				} {
					nd := zonedNode(n.name, "a")
					nd.Status.Allocatable[v1.ResourceCPU] = resource.MustParse(n.cpu)
					nd.Status.Allocatable[v1.ResourceMemory] = resource.MustParse(n.mem)
					f.h.AddNode(nd)
				}
				first, then := pod("first", 1000), pod("then", 1000)
				tc.first(first)
				tc.then(then)
				if got := f.place(first); got != "wide" {
					t.Fatalf("the first pod went to %s, want wide", got)
				}
				if !batched {
					*now = now.Add(time.Second) // the batch too old
				}
				return f.place(then), f.s.batch.hints
			}
			want, hints := place(false)
			if hints != 0 || want != "tall" {
				t.Fatalf("a full search sent the second pod to %s (%d hints), want tall", want, hints)
			}
			if got, _ := place(true); got != want {
				t.Fatalf("after the first pod's batch the second went to %s; scoring every node sends it to %s", got, want)
			}
		})
	}
}
