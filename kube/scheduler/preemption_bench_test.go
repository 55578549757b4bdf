package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/plugins"
	"github.com/schedq/schedq/kube/scheduler"
)

type noEvict struct{}

func (noEvict) Preempt(context.Context, scheduler.Preemption, func([]error)) {}

func benchPod(name string, milliCPU int64, prio int32) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
		Spec: v1.PodSpec{Priority: &prio, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{
				v1.ResourceCPU:    *resource.NewMilliQuantity(milliCPU, resource.DecimalSI),
				v1.ResourceMemory: resource.MustParse("1Gi"),
			},
		}}}},
	}
}

// BenchmarkPreemptionSearch is one preemption decision in a full cluster
// of 5,000 nodes with 20 pods each, of four priorities below the
// preemptor's: every node is a candidate, and the search, as
// kube-scheduler's, stops once it has 10% of them (500), each found by
// reprieving its 20 potential victims one by one through the default
// plugins' filters. Goal: under 20 ms per decision.
func BenchmarkPreemptionSearch(b *testing.B) {
	const nodes, perNode = 5000, 20
	c := scheduler.NewCache()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i)
		c.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110"),
			}}})
		for j := range perNode {
			p := benchPod(fmt.Sprintf("low-%d-%d", i, j), 1600, int32(10*((i+j)%4)))
			p.Spec.NodeName = name
			p.Status.StartTime = &metav1.Time{Time: start.Add(time.Duration(i*perNode+j) * time.Second)}
			if err := c.AddPod(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	profile := framework.Profile(plugins.Default(plugins.LeastAllocated))
	q, err := schedq.New(scheduler.QueueConfig(profile))
	if err != nil {
		b.Fatal(err)
	}
	s := scheduler.New(q, c, nil, nil, scheduler.Options{Profile: profile, Rand: rand.New(rand.NewPCG(1, 2))})
	if err := s.EnablePreemption(scheduler.PreemptionOptions{Evictor: noEvict{}}); err != nil {
		b.Fatal(err)
	}
	pi, err := framework.NewPodInfo(benchPod("high", 3000, 1000))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out := s.PlanPreemption(ctx, pi)
		if out.Nominated == "" || len(out.Victims) != 2 {
			b.Fatalf("nominated %q, %d victims: %s", out.Nominated, len(out.Victims), out.Message)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/decision")
}
