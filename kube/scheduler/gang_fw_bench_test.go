package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// BenchmarkGangCycle is one group attempt of a gang of 8 (minCount 8) on
// 500 empty nodes, through the real Scheduler (pop, place the members one
// by one, assume, bind with a binder that returns at once), on
// kube-scheduler's framework with its default profile (the members
// placed in the framework's snapshot). Each gang is a new
// PodGroup and stays assumed. It reports the process's CPU time per
// attempt (cpu-ns/op) and per member (cpu-ns/member).
func BenchmarkGangCycle(b *testing.B) {
	b.Run("framework/500Nodes", func(b *testing.B) { benchmarkGangCycle(b, 500, 8) })
}

func benchmarkGangCycle(b *testing.B, nodes, members int) {
	ctx := context.Background()
	c, o := benchSetup(b, nodes)
	q, err := schedq.New(scheduler.QueueConfig())
	if err != nil {
		b.Fatal(err)
	}
	h := &scheduler.Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	s := newBenchScheduler(b, q, c, o)
	i := 0
	attempt := func() {
		i++
		group := fmt.Sprintf("g-%d", i)
		pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: group}}
		pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(members)}
		h.AddPodGroup(pg)
		for j := range members {
			p := benchPod(fmt.Sprintf("%s-%d", group, j), 10, 0)
			p.Spec.SchedulerName = "schedq"
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
			h.AddPod(p)
		}
		a, err := q.Pop(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if out := s.ScheduleOne(ctx, a); out.Result != scheduler.Scheduled || a.Group == "" {
			b.Fatalf("%s: %+v", a.Group, out)
		}
	}
	attempt() // the first snapshot copies every node
	b.ReportAllocs()
	cpu0 := benchCPU(b)
	b.ResetTimer()
	for b.Loop() {
		attempt()
	}
	cpu := float64(benchCPU(b) - cpu0)
	b.ReportMetric(cpu/float64(b.N), "cpu-ns/op")
	b.ReportMetric(cpu/float64(b.N*members), "cpu-ns/member")
}
