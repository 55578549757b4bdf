package main

import (
	"context"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/bench/compare/internal/schedqdrv"
	"github.com/schedq/schedq/bench/compare/internal/stream"
	"github.com/schedq/schedq/bench/compare/internal/upstream"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/sim"
)

// schedqPeer benchmarks schedq's concurrent Queue (one mutex, as a
// scheduler would use it) with the same pods, plugins and hints as the
// upstream peer.
func schedqPeer() Peer {
	return Peer{
		Name:         "schedq",
		AddPopDone:   schedqAddPopDone,
		FailRequeue:  schedqFailRequeue,
		MoveAll:      schedqMoveAll,
		BytesPerItem: schedqBytesPerItem,
		Mixed:        schedqMixed,
		Groups:       withClasses,
		Stream:       schedqStream,
	}
}

type schedqQueue = schedq.Queue[types.NamespacedName, *v1.Pod]

// schedqConfig is the driver's configuration on clk, with Run flushing
// where the upstream peer flushes. The driver's 1 ns flush periods make
// every Tick run both flushes, as its Flush runs upstream's two; under
// Run they would run the leftover flush, a scan of every parked pod, at
// every clock step: 32 times per leftoverEvery ops of a stream where the
// upstream peer runs it once. Here the backoff flush runs at every step
// of the streams (tickStep or more), and the leftover flush once per
// leftoverPeriod, in the leftoverStep step that precedes the upstream
// peer's own.
func schedqConfig(clk *runClock) schedq.Config[types.NamespacedName, *v1.Pod] {
	cfg := schedqdrv.Config(upstream.Options{})
	cfg.Clock = clk
	cfg.FlushBackoffInterval = tickStep
	cfg.FlushUnschedulableInterval = leftoverPeriod
	return cfg
}

func newSchedq(b testing.TB) (*schedqQueue, *runClock) {
	clk := newRunClock()
	q, err := schedq.New(schedqConfig(clk))
	if err != nil {
		b.Fatal(err)
	}
	runQueue(b, q, clk)
	return q, clk
}

func schedqAddPopDone(n int) func(b *testing.B) {
	return func(b *testing.B) {
		q, _ := newSchedq(b)
		ctx := context.Background()
		pods := upstreamPods(n + 1)
		for _, p := range pods[:n] {
			q.Add(p)
		}
		spare := pods[n]
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			q.Add(spare)
			info, err := q.Pop(ctx)
			if err != nil {
				b.Fatal(err)
			}
			q.Done(info)
			spare = info.Item
		}
	}
}

func schedqFailRequeue(n int) func(b *testing.B) {
	return func(b *testing.B) {
		q, clk := newSchedq(b)
		ctx := context.Background()
		for _, p := range upstreamPods(n) {
			q.Add(p)
		}
		popped := 0
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if popped == n {
				// All n are in error backoff, which Pop never takes from:
				// let them expire and flush them back, as upstream's peer does.
				clk.Step(10*time.Second + 2*time.Second) // the maximum backoff, and its window
				popped = 0
			}
			info, err := q.Pop(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := q.Requeue(info, schedq.Failure{}); err != nil {
				b.Fatal(err)
			}
			popped++
		}
	}
}

func schedqMoveAll(n int, move bool) func(b *testing.B) {
	return func(b *testing.B) {
		q, clk := newSchedq(b)
		ctx := context.Background()
		for _, p := range upstreamPods(n) {
			q.Add(p)
		}
		fail := schedq.Failure{RejectedBy: []string{upstream.PluginA}}
		park := func() {
			for range n {
				info, err := q.Pop(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := q.Requeue(info, fail); err != nil {
					b.Fatal(err)
				}
			}
			clk.Step(time.Minute) // backoff over: a Queue hint sends them to activeQ
		}
		park()
		if got := q.Counts().Unschedulable; got != n {
			b.Fatalf("parked %d, want %d", got, n)
		}
		policy := upstream.HintSkipAll
		if move {
			policy = upstream.HintQueueAll
		}
		_, oldObj, newObj := upstream.EventArgs(upstream.NodeAdd, policy)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			q.Move(clusterevent.NodeAdd, oldObj, newObj, nil)
			if move {
				b.StopTimer()
				park()
				b.StartTimer()
			}
		}
	}
}

func schedqBytesPerItem(n int) float64 {
	q, _ := newSchedq(&testing.B{})
	defer q.Close() // ends its Run: a bare testing.B never runs cleanups
	pods := upstreamPods(n)
	before := heapBytes()
	for _, p := range pods {
		q.Add(p)
	}
	after := heapBytes()
	runtime.KeepAlive(pods)
	runtime.KeepAlive(q)
	return float64(int64(after)-int64(before)) / float64(n)
}

func schedqMixed(n int) func(b *testing.B) {
	return func(b *testing.B) {
		q, clk := newSchedq(b)
		runMixed(b, n, schedqMixedOps(b, q, clk))
	}
}

// schedqMixedOps are the mixed stream's operations on q, whose Run clk
// drives.
func schedqMixedOps(b testing.TB, q *schedqQueue, clk *runClock) mixedOps {
	ctx := context.Background()
	var cur schedq.Attempt[types.NamespacedName, *v1.Pod]
	return mixedOps{
		add: func(p *v1.Pod) { q.Add(p) },
		del: func(p *v1.Pod) { q.Delete(schedqdrv.Key(p)) },
		pop: func() *v1.Pod {
			info, err := q.Pop(ctx)
			if err != nil {
				b.Fatal(err)
			}
			cur = info
			return info.Item
		},
		fail: func(plugins []string) {
			if err := q.Requeue(cur, schedq.Failure{RejectedBy: plugins}); err != nil {
				b.Fatal(err)
			}
		},
		done: func() {
			if err := q.Done(cur); err != nil {
				b.Fatal(err)
			}
		},
		event: func(oldObj, newObj any) {
			q.Move(clusterevent.NodeAdd, oldObj, newObj, nil)
		},
		tick: func(d time.Duration) {
			clk.Step(d) // Run flushes
		},
		// Run ran the leftover flush in the step before (schedqConfig).
		leftover: func() {},
	}
}

func schedqStream(ops []sim.Op) func(b *testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s, err := stream.NewSchedq()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := s.Replay(ops); err != nil {
				b.Fatal(err)
			}
		}
	}
}
