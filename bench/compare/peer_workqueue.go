package main

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

// workqueuePeer benchmarks client-go's TypedRateLimitingInterface (FIFO, no
// priorities, no event-driven requeue).
func workqueuePeer() Peer {
	return Peer{
		Name:         "workqueue",
		AddPopDone:   wqAddPopDone,
		FailRequeue:  wqFailRequeue,
		BytesPerItem: wqBytesPerItem,
	}
}

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("default/pod-%d", i)
	}
	return out
}

func newWQ(clk *testingclock.FakeClock) workqueue.TypedRateLimitingInterface[string] {
	cfg := workqueue.TypedRateLimitingQueueConfig[string]{}
	if clk != nil {
		cfg.Clock = clk
	}
	// Same limiter as client-go's default controller limiter's per-item part.
	lim := workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second)
	return workqueue.NewTypedRateLimitingQueueWithConfig(lim, cfg)
}

func wqAddPopDone(n int) func(b *testing.B) {
	return func(b *testing.B) {
		q := newWQ(nil)
		defer q.ShutDown()
		ks := keys(n + 1)
		for _, k := range ks[:n] {
			q.Add(k)
		}
		spare := ks[n]
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			q.Add(spare)
			k, _ := q.Get()
			q.Done(k)
			spare = k
		}
	}
}

func wqFailRequeue(n int) func(b *testing.B) {
	return func(b *testing.B) {
		clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		q := newWQ(clk)
		defer q.ShutDown()
		for _, k := range keys(n) {
			q.Add(k)
		}
		popped := 0
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if popped == n {
				// Everything is waiting for its rate-limit delay: expire all
				// and wait for the delaying queue's goroutine to re-add them.
				clk.Step(1001 * time.Second)
				for q.Len() < n {
					runtime.Gosched()
				}
				popped = 0
			}
			k, _ := q.Get()
			q.Done(k)
			q.AddRateLimited(k)
			popped++
		}
	}
}

func wqBytesPerItem(n int) float64 {
	q := newWQ(nil)
	defer q.ShutDown()
	ks := keys(n)
	before := heapBytes()
	for _, k := range ks {
		q.Add(k)
	}
	after := heapBytes()
	runtime.KeepAlive(ks)
	runtime.KeepAlive(q)
	return float64(int64(after)-int64(before)) / float64(n)
}
