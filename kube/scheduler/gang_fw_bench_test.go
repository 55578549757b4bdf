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
// by one, assume, bind with a binder that returns at once), on schedq's
// own plugins ("schedq": a trial in the cache under its write lock) and
// on kube-scheduler's framework with its default profile ("framework":
// the members placed in the framework's snapshot). Each gang is a new
// PodGroup and stays assumed. It reports the process's CPU time per
// attempt (cpu-ns/op) and per member (cpu-ns/member).
func BenchmarkGangCycle(b *testing.B) {
	for _, path := range []string{"schedq", "framework"} {
		b.Run(path+"/500Nodes", func(b *testing.B) { benchmarkGangCycle(b, 500, 8, path == "framework") })
	}
}

func benchmarkGangCycle(b *testing.B, nodes, members int, upstream bool) {
	ctx := context.Background()
	c, o, prof := benchSetup(b, nodes, upstream)
	q, err := schedq.New(scheduler.QueueConfig(prof))
	if err != nil {
		b.Fatal(err)
	}
	h := &scheduler.Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	s := scheduler.New(q, c, benchBinder{}, benchReporter{}, o)
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
