package main

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq/bench/compare/internal/stream"
	"github.com/schedq/schedq/bench/compare/internal/upstream"
	"github.com/schedq/schedq/kube/sim"
)

// upstreamPeer benchmarks k8s.io/kubernetes/pkg/scheduler/backend/queue
// (v1.37.2) directly, without the differential Driver's bookkeeping.
func upstreamPeer() Peer {
	return Peer{
		Name:         "upstream",
		AddPopDone:   upstreamAddPopDone,
		FailRequeue:  upstreamFailRequeue,
		MoveAll:      upstreamMoveAll,
		BytesPerItem: upstreamBytesPerItem,
		Mixed:        upstreamMixed,
		Groups:       upstreamGroups,
		Stream:       upstreamStream,
	}
}

func upstreamPods(n int) []*v1.Pod {
	prio := priorities(n)
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = upstream.NewPod(fmt.Sprintf("pod-%d", i), prio[i], nil)
	}
	return pods
}

func upstreamAddPopDone(n int) func(b *testing.B) {
	return func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		q, _ := upstream.NewBenchQueue(ctx, upstream.Options{})
		defer q.Close()
		logger := klog.FromContext(ctx)
		pods := upstreamPods(n + 1)
		for _, p := range pods[:n] {
			q.Add(ctx, p)
		}
		spare := pods[n]
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			q.Add(ctx, spare)
			pi, err := upstream.PopPod(q, logger)
			if err != nil {
				b.Fatal(err)
			}
			q.Done(pi.Pod.UID)
			spare = pi.Pod
		}
	}
}

func upstreamFailRequeue(n int) func(b *testing.B) {
	return func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		o := upstream.Options{}
		q, clk := upstream.NewBenchQueue(ctx, o)
		defer q.Close()
		logger := klog.FromContext(ctx)
		for _, p := range upstreamPods(n) {
			q.Add(ctx, p)
		}
		popped := 0
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if popped == n {
				// All n are in the error-backoff heap, which Pop never takes
				// from: let them expire and flush them back to activeQ.
				clk.Step(queue.DefaultPodMaxBackoffDuration + 2*time.Second)
				upstream.FlushBackoffQ(q, logger)
				popped = 0
			}
			pi, err := upstream.PopPod(q, logger)
			if err != nil {
				b.Fatal(err)
			}
			cycle := q.SchedulingCycle()
			pi.ClearRejectorPlugins() // error path: no rejector plugins
			if err := q.AddUnschedulablePodIfNotPresent(logger, pi, cycle); err != nil {
				b.Fatal(err)
			}
			popped++
		}
	}
}

func upstreamMoveAll(n int, move bool) func(b *testing.B) {
	return func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		q, clk := upstream.NewBenchQueue(ctx, upstream.Options{})
		defer q.Close()
		logger := klog.FromContext(ctx)
		pods := upstreamPods(n)
		for _, p := range pods {
			q.Add(ctx, p)
		}
		park := func() {
			for range n {
				pi, err := upstream.PopPod(q, logger)
				if err != nil {
					b.Fatal(err)
				}
				pi.ClearRejectorPlugins()
				pi.UnschedulablePlugins = sets.New(upstream.PluginA)
				if err := q.AddUnschedulablePodIfNotPresent(logger, pi, q.SchedulingCycle()); err != nil {
					b.Fatal(err)
				}
			}
			// Make the parked pods' backoff expire so a Queue hint sends
			// them straight to activeQ (the common case for pods that sat
			// in the unschedulable pool for a while).
			clk.Step(time.Minute)
		}
		park()
		if got := len(q.UnschedulablePods()); got != n {
			b.Fatalf("parked %d, want %d", got, n)
		}
		policy := upstream.HintSkipAll
		if move {
			policy = upstream.HintQueueAll
		}
		ev, oldObj, newObj := upstream.EventArgs(upstream.NodeAdd, policy)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			q.MoveAllToActiveOrBackoffQueue(logger, ev, oldObj, newObj, nil)
			if move {
				b.StopTimer()
				park()
				b.StartTimer()
			}
		}
	}
}

func upstreamBytesPerItem(n int) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q, _ := upstream.NewBenchQueue(ctx, upstream.Options{})
	defer q.Close()
	pods := upstreamPods(n)
	before := heapBytes()
	for _, p := range pods {
		q.Add(ctx, p)
	}
	after := heapBytes()
	runtime.KeepAlive(pods)
	runtime.KeepAlive(q)
	return float64(int64(after)-int64(before)) / float64(n)
}

func upstreamMixed(n int) func(b *testing.B) {
	return func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		q, clk := upstream.NewBenchQueue(ctx, upstream.Options{})
		defer q.Close()
		logger := klog.FromContext(ctx)
		var cur *framework.QueuedPodInfo
		var cycle int64
		runMixed(b, n, mixedOps{
			add: func(p *v1.Pod) { q.Add(ctx, p) },
			del: func(p *v1.Pod) { q.Delete(logger, p) },
			pop: func() *v1.Pod {
				pi, err := upstream.PopPod(q, logger)
				if err != nil {
					b.Fatal(err)
				}
				cur, cycle = pi, q.SchedulingCycle()
				return pi.Pod
			},
			fail: func(plugins []string) {
				cur.ClearRejectorPlugins()
				cur.UnschedulablePlugins = sets.New(plugins...)
				if err := q.AddUnschedulablePodIfNotPresent(logger, cur, cycle); err != nil {
					b.Fatal(err)
				}
			},
			done: func() { q.Done(cur.Pod.UID) },
			event: func(oldObj, newObj any) {
				ev, _, _ := upstream.EventArgs(upstream.NodeAdd, upstream.HintByLabel)
				q.MoveAllToActiveOrBackoffQueue(logger, ev, oldObj, newObj, nil)
			},
			tick: func(d time.Duration) {
				clk.Step(d)
				upstream.FlushBackoffQ(q, logger)
			},
			leftover: func() { upstream.FlushLeftover(q, logger) },
		})
	}
}

func upstreamStream(ops []sim.Op) func(b *testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			u, err := stream.NewUpstream()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := u.Replay(ops, false); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			u.Close()
			b.StartTimer()
		}
	}
}
