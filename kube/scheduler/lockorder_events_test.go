package scheduler

import (
	"context"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
)

// heldMove is a queue whose Move waits for release before it runs: a pod
// handler slow in the queue (hints over many parked pods, say) while it
// holds the pod events' lock.
type heldMove struct {
	Queue
	release chan struct{}
}

func (q *heldMove) Move(ev schedq.Event, oldObj, newObj any, match func(*schedq.Info[*v1.Pod]) bool) error {
	<-q.release
	return q.Queue.Move(ev, oldObj, newObj, match)
}

// TestLockOrderNominationWaitsOnlyForTheHandler: a preemption cycle
// writes its nomination (nominateFor) under the pod events' lock while
// a pod handler holds that lock and is held inside the queue's Move. The
// cycle waits for that handler and nothing else: meanwhile a cache
// writer and the queue's readers go through (the cycle holds neither the
// cache's lock nor the queue's while it waits), and once the handler is
// done the cycle nominates its pod. A slow handler delays the scheduling
// loop by its own length, once per nomination written; it cannot
// deadlock it, since no handler waits for anything the loop holds.
func TestLockOrderNominationWaitsOnlyForTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, e := newPreemptFixture(t)
		defer f.q.Close()
		f.h.AddNode(node("a", 4000))
		f.h.AddNode(node("z", 1000))
		f.h.AddPod(runningPod("low", "a", 4000, 1, t0))
		tiny := runningPod("tiny", "z", 500, 1, t0)
		f.h.AddPod(tiny)
		f.h.AddPod(prioPod("high", 4000, 100))
		info, err := f.q.Pop(ended)
		if err != nil {
			t.Fatal(err)
		}

		slow := &heldMove{Queue: f.q, release: make(chan struct{})}
		h := *f.h
		h.Queue = slow
		handled := make(chan struct{})
		go func() { // tiny's deletion: the cache is updated, then the Move waits
			h.DeletePod(tiny)
			close(handled)
		}()
		synctest.Wait() // the handler holds the pod events' lock, inside Move
		cycled := make(chan Outcome, 1)
		go func() { cycled <- f.s.ScheduleOne(context.Background(), info) }()
		synctest.Wait() // the cycle waits for the pod events' lock in nominateFor
		select {
		case out := <-cycled:
			t.Fatalf("the cycle ended (%+v) while a handler held the pod events' lock", out)
		default:
		}
		if got := f.nomination("high"); got != "" || len(e.calls) != 0 {
			t.Fatalf("high nominated to %q, evictions %v, before the handler let go of the lock", got, e.calls)
		}
		f.c.AddNode(node("b", 1000))            // the cache's lock is free
		if _, _, ok := f.q.Get(info.Key); !ok { // the queue's lock is free
			t.Fatal("high is not in flight")
		}
		close(slow.release)
		<-handled
		out := <-cycled
		if out.Result != Unschedulable || out.Nominated != "a" {
			t.Errorf("high: %+v, want Unschedulable, nominated to a", out)
		}
		if got := f.nomination("high"); got != "a" {
			t.Errorf("high nominated to %q once the handler was done, want a", got)
		}
	})
}
