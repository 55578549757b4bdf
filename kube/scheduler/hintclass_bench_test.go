package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// BenchmarkParkedReplicasNodeUpdate is one node update (its allocatable
// grows, too little for anyone) while 1,000 pods rejected by
// NodeResourcesFit are parked, on the framework path with the default
// profile: the hints of the event run, every pod stays parked. The pods
// are replicas of 1 or 10 templates; class=on is the framework path's
// HintClass (PodHintClass), class=off the queue without one, which asks
// every pod. Besides the wall time it reports the process's CPU time per
// event (cpu-ns/op, GC included). Compare with benchstat -col /class.
func BenchmarkParkedReplicasNodeUpdate(b *testing.B) {
	for _, templates := range []int{1, 10} {
		for _, class := range []string{"off", "on"} {
			b.Run(fmt.Sprintf("templates=%d/class=%s", templates, class), func(b *testing.B) {
				benchmarkParkedReplicas(b, 1000, templates, class == "on")
			})
		}
	}
}

func benchmarkParkedReplicas(b *testing.B, pods, templates int, classes bool) {
	ctx := context.Background()
	c, o := benchSetup(b, 0)
	qc := scheduler.QueueConfig()
	if err := scheduler.UseFrameworkHints(ctx, &qc, o.Profiles[0], klog.Background()); err != nil {
		b.Fatal(err)
	}
	if !classes {
		qc.HintClass = nil
	}
	q, err := schedq.New(qc)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	h := &scheduler.Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	s := newBenchScheduler(b, q, c, o)
	small := func(milliCPU int64) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "small", Labels: map[string]string{"kubernetes.io/hostname": "small"}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{
				v1.ResourceCPU: *resource.NewMilliQuantity(milliCPU, resource.DecimalSI), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110"),
			}}}
	}
	h.AddNode(small(1000))
	for i := range pods {
		p := benchPod(fmt.Sprintf("p-%d", i), int64(2000+i%templates), 0)
		p.Spec.SchedulerName = "schedq"
		h.AddPod(p)
		info, err := q.Pop(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if out := s.ScheduleOne(ctx, info); out.Result != scheduler.Unschedulable {
			b.Fatalf("%+v", out)
		}
	}
	if n := q.Counts().Unschedulable; n != pods {
		b.Fatalf("%d parked, want %d", n, pods)
	}
	nodes := [2]*v1.Node{small(1000), small(1100)}
	b.ReportAllocs()
	cpu0 := benchCPU(b)
	i := 0
	for b.Loop() {
		h.UpdateNode(nodes[i%2], nodes[(i+1)%2])
		i++
	}
	b.ReportMetric(float64(benchCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	if n := q.Counts().Unschedulable; n != pods {
		b.Fatalf("%d parked after the updates, want %d", n, pods)
	}
}

// BenchmarkPodHintClass is the class of one pod, which the queue computes
// when it parks or updates the pod: what the class costs, against the
// hint calls it saves per event.
func BenchmarkPodHintClass(b *testing.B) {
	p := benchPod("p", 2000, 0)
	p.Labels = map[string]string{"app": "web", "pod-template-hash": "5d8f9c7b6"}
	b.ReportAllocs()
	cpu0 := benchCPU(b)
	for b.Loop() {
		scheduler.PodHintClass(p)
	}
	b.ReportMetric(float64(benchCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}
