package main

import (
	"runtime"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// crPeer benchmarks sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue
// (v0.25.2, the release line built against k8s.io/* v0.37).
func crPeer() Peer {
	return Peer{
		Name:         "ctrl-rt-pq",
		AddPopDone:   crAddPopDone,
		FailRequeue:  crFailRequeue,
		BytesPerItem: crBytesPerItem,
	}
}

// constLimiter always asks for the same delay.
type constLimiter struct{ d time.Duration }

func (l constLimiter) When(string) time.Duration { return l.d }
func (constLimiter) Forget(string)               {}
func (constLimiter) NumRequeues(string) int      { return 0 }

var _ workqueue.TypedRateLimiter[string] = constLimiter{}

func newCR(lim workqueue.TypedRateLimiter[string]) priorityqueue.PriorityQueue[string] {
	// Empty name: controller-runtime skips metrics for unnamed queues.
	return priorityqueue.New[string]("", func(o *priorityqueue.Opts[string]) {
		if lim != nil {
			o.RateLimiter = lim
		}
	})
}

func crFill(q priorityqueue.PriorityQueue[string], ks []string, prio []int32) {
	for i, k := range ks {
		p := int(prio[i])
		q.AddWithOpts(priorityqueue.AddOpts{Priority: &p}, k)
	}
	for q.Len() < len(ks) { // Len flushes the asynchronous add buffer
		runtime.Gosched()
	}
}

func crAddPopDone(n int) func(b *testing.B) {
	return func(b *testing.B) {
		q := newCR(nil)
		defer q.ShutDown()
		ks := keys(n + 1)
		prio := priorities(n + 1)
		crFill(q, ks[:n], prio)
		spare, spareP := ks[n], int(prio[n])
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			q.AddWithOpts(priorityqueue.AddOpts{Priority: &spareP}, spare)
			k, p, _ := q.GetWithPriority()
			q.Done(k)
			spare, spareP = k, p
		}
	}
}

func crFailRequeue(n int) func(b *testing.B) {
	return func(b *testing.B) {
		q := newCR(constLimiter{d: time.Nanosecond})
		defer q.ShutDown()
		crFill(q, keys(n), priorities(n))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			k, p, _ := q.GetWithPriority()
			q.Done(k)
			q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true, Priority: &p}, k)
		}
	}
}

func crBytesPerItem(n int) float64 {
	q := newCR(nil)
	defer q.ShutDown()
	ks := keys(n)
	prio := priorities(n)
	before := heapBytes()
	crFill(q, ks, prio)
	after := heapBytes()
	runtime.KeepAlive(ks)
	runtime.KeepAlive(q)
	return float64(int64(after)-int64(before)) / float64(n)
}
