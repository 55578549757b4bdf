package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/profile"
)

// failEvict fails every eviction at once, so that each cycle of a
// benchmark starts from the same state (no victim leaving, no nomination).
type failEvict struct{}

func (failEvict) Wait() {}

func (failEvict) Preempt(_ context.Context, _ Preemption, done func([]error)) {
	done([]error{errors.New("benchmark")})
}

// BenchmarkFrameworkPreemptionCycle is BenchmarkPreemptionSearch's
// cluster (5,000 full nodes of 20 pods of four priorities below the
// preemptor's) on the framework path: one whole cycle of the real
// Scheduler with the default profile, the filters failing on every node,
// then DefaultPreemption's dry run on 500 candidates and its pick. It
// reports the process's CPU time per cycle (cpu-ns/op, GC included)
// beside the wall time, as BenchmarkCycle does.
func BenchmarkFrameworkPreemptionCycle(b *testing.B) { benchFrameworkPreemption(b, nil) }

// BenchmarkFrameworkPreemptionCycleFewerCandidates is the same cycle
// with DefaultPreemptionArgs asking for 100 candidates (1%, at least
// 100) instead of the default 500 (10%, at least 100): what a smaller
// dry run saves.
func BenchmarkFrameworkPreemptionCycleFewerCandidates(b *testing.B) {
	benchFrameworkPreemption(b, func(args *config.DefaultPreemptionArgs) {
		args.MinCandidateNodesPercentage, args.MinCandidateNodesAbsolute = 1, 100
	})
}

// benchFrameworkPreemption runs the cycle of BenchmarkFrameworkPreemptionCycle
// with the default profile, its DefaultPreemptionArgs changed by args if
// not nil.
func benchFrameworkPreemption(b *testing.B, args func(*config.DefaultPreemptionArgs)) {
	const nodes, perNode = 5000, 20
	cfg, err := profile.Default()
	if err != nil {
		b.Fatal(err)
	}
	if args != nil {
		found := false
		for _, pc := range cfg.Profiles[0].PluginConfig {
			if a, ok := pc.Args.(*config.DefaultPreemptionArgs); ok {
				args(a)
				found = true
			}
		}
		if !found {
			b.Fatal("the default profile has no DefaultPreemptionArgs")
		}
	}
	fw, err := profile.NewFrameworkOn(context.Background(), &cfg.Profiles[0], profile.Setup{Snapshot: backendcache.NewEmptySnapshot()})
	if err != nil {
		b.Fatal(err)
	}
	defer fw.Close()
	q, err := schedq.New(QueueConfig())
	if err != nil {
		b.Fatal(err)
	}
	c := NewCache()
	h := &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	s := mustNew(b, q, c, &syncBinder{}, &recReporter{}, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 2)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := s.EnablePreemption(PreemptionOptions{Evictor: failEvict{}}); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i)
		h.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110"),
			}}})
		for j := range perNode {
			p := prioPod(fmt.Sprintf("low-%d-%d", i, j), 1600, int32(10*((i+j)%4)))
			p.Spec.NodeName = name
			p.Status.StartTime = &metav1.Time{Time: start.Add(time.Duration(i*perNode+j) * time.Second)}
			h.AddPod(p)
		}
	}
	high := prioPod("high", 3000, 1000)
	h.AddPod(high)
	key := types.NamespacedName{Namespace: "default", Name: "high"}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	for b.Loop() {
		if err := q.Activate(key); err != nil && !errors.Is(err, schedq.ErrNotFound) {
			b.Fatal(err)
		}
		info, err := q.Pop(ctx)
		if err != nil {
			b.Fatal(err)
		}
		out := s.ScheduleOne(ctx, info)
		if out.Nominated == "" || len(out.Victims) != 2 {
			b.Fatalf("nominated %q, %d victims: %s", out.Nominated, len(out.Victims), out.Message)
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's CPU time so far (user and system), as
// scheduler_test's benchCPU.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
