package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

type benchBinder struct{}

func (benchBinder) Bind(_ context.Context, _ *v1.Pod, _ string, start func() bool, done func(error)) {
	if scheduler.Started(start, done) {
		done(nil)
	}
}

type benchReporter struct{}

func (benchReporter) Unschedulable(context.Context, *v1.Pod, string, string, func() scheduler.FailureRecord) {
}
func (benchReporter) Scheduled(context.Context, *v1.Pod, string)           {}
func (benchReporter) Warn(context.Context, runtime.Object, string, string) {}

// BenchmarkCycle is one lone pod's scheduling cycle (pop, filter,
// score, pick, assume, bind) on kube-scheduler's framework with its
// default profile, on 500 and 5,000 empty nodes with adaptive sampling
// (every node fits: 230 and 500 nodes examined). Each pod stays assumed,
// so the framework's snapshot update copies one changed node per cycle.
// Besides the wall time it reports the process's CPU time per cycle
// (cpu-ns/op, GC included), which a shared machine distorts less.
// Consecutive pods are alike, so every cycle but the first of a batch
// takes the batch's hint ("framework"); "framework-unbatched" alternates
// two CPU requests, so that no two consecutive pods share a signature and
// every cycle filters and scores a sample.
func BenchmarkCycle(b *testing.B) {
	for _, n := range []int{500, 5000} {
		for _, path := range []string{"framework", "framework-unbatched"} {
			b.Run(fmt.Sprintf("%s/%dNodes", path, n), func(b *testing.B) {
				benchmarkCycle(b, n, path == "framework-unbatched")
			})
		}
	}
}

func benchmarkCycle(b *testing.B, nodes int, alternate bool) {
	ctx := context.Background()
	c, o := benchSetup(b, nodes)
	q, err := schedq.New(scheduler.QueueConfig())
	if err != nil {
		b.Fatal(err)
	}
	s := newBenchScheduler(b, q, c, o)
	i := 0
	cycle := func() {
		i++
		cpu := int64(10)
		if alternate && i%2 == 0 {
			cpu = 20
		}
		if err := q.Add(benchPod(fmt.Sprintf("p-%d", i), cpu, 0)); err != nil {
			b.Fatal(err)
		}
		a, err := q.Pop(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if out := s.ScheduleOne(ctx, a); out.Result != scheduler.Scheduled {
			b.Fatalf("%+v", out)
		}
	}
	cycle() // the first snapshot copies every node
	b.ReportAllocs()
	cpu0 := benchCPU(b)
	b.ResetTimer()
	for b.Loop() {
		cycle()
	}
	b.ReportMetric(float64(benchCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// benchSetup is a cache of nodes empty nodes (32 CPUs each) and the
// options of a scheduler on kube-scheduler's framework with its default
// profile (closed when b ends).
func benchSetup(b *testing.B, nodes int) (*scheduler.Cache, scheduler.Options) {
	c := scheduler.NewCache()
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i)
		c.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110"),
			}}})
	}
	cfg, err := profile.Default()
	if err != nil {
		b.Fatal(err)
	}
	fw, err := profile.NewFrameworkOn(context.Background(), &cfg.Profiles[0], profile.Setup{Snapshot: backendcache.NewEmptySnapshot()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fw.Close() })
	return c, scheduler.Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 2))}
}

// newBenchScheduler is scheduler.New, failing b on an error.
func newBenchScheduler(b *testing.B, q scheduler.Queue, c *scheduler.Cache, o scheduler.Options) *scheduler.Scheduler {
	s, err := scheduler.New(q, c, benchBinder{}, benchReporter{}, o)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

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

// benchCPU is the process's user and system CPU time.
func benchCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
