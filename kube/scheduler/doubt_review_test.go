package scheduler

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// slotWaitBinder ends the term while a binding waits for one of the
// binder's slots: the binding ends with the context's error and start is
// never called, as APIBinder.Bind does then. Its pendingBinding is
// thus left pending, not started.
type slotWaitBinder struct{ cancel context.CancelFunc }

func (b slotWaitBinder) Bind(_ context.Context, _ *v1.Pod, _ string, _ func() bool, done func(error)) {
	b.cancel()
	done(context.Canceled)
}

// TestInDoubtOutlivesItsNodeAndItsTerm: a binding in doubt whose request
// never started (it waited for a slot as the term ended) is no longer its
// term's: the deletion of its node in the next term must not abort it as
// an unstarted binding, which forgot the pod and gave it back to the
// ended term's queue (closed), so that no live queue held it and nothing
// was left to settle. It stays in doubt, and the next term's read queues
// it in that term's queue.
func TestInDoubtOutlivesItsNodeAndItsTerm(t *testing.T) {
	f := newFixture(t) // f.q, f.h: the next term's queue and handlers
	old, err := schedq.New(testQueueConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := mustNew(t, old, f.c, slotWaitBinder{cancel: cancel}, f.r, Options{})
	f.h.AddNode(node("n", 1000))
	p := pod("p", 100)
	if err := old.Add(p); err != nil {
		t.Fatal(err)
	}
	info, err := old.Pop(ended)
	if err != nil {
		t.Fatal(err)
	}
	s.ScheduleOne(ctx, info)
	s.Wait()
	old.Close() // the term ended: its queue is discarded
	if d := f.c.InDoubt(); len(d) != 1 {
		t.Fatalf("in doubt after the term: %v", d)
	}
	f.h.DeleteNode(node("n", 1000))
	d := f.c.InDoubt()
	if len(d) != 1 {
		t.Fatalf("in doubt after its node's deletion: %v, want p (it was aborted and left in no queue)", d)
	}
	f.h.SettleInDoubt(d[0], p) // the read: not bound
	if _, _, queued := f.q.Get(framework.Key(p)); !queued {
		t.Errorf("p, settled unbound, is not in the next term's queue")
	}
}

// TestSettledBoundElsewhereCountsWhereItIs: a pod in doubt on n that the
// read finds bound to m (another leader bound it while this process did
// not lead) is counted on m, where it runs, not kept on n: the informer,
// which lags, may not show it on m for a while, and m would look free
// meanwhile.
func TestSettledBoundElsewhereCountsWhereItIs(t *testing.T) {
	f := newFixture(t)
	f.h.AddNode(node("n", 1000))
	f.h.AddNode(node("m", 1000))
	p := pod("p", 1000)
	inDoubtOn(t, f.c, p, "n")
	d := f.c.InDoubt()
	if len(d) != 1 {
		t.Fatalf("in doubt: %v", d)
	}
	f.h.SettleInDoubt(d[0], boundTo(p, "m"))
	if n, _ := f.c.NodeOf(framework.Key(p)); n != "m" {
		t.Errorf("settled bound to m, counted on %q", n)
	}
	f.c.View(func(s framework.Snapshot) {
		for _, name := range []string{"n", "m"} {
			ni, _ := s.Node(name)
			want := 0
			if name == "m" {
				want = 1
			}
			if len(ni.Pods) != want {
				t.Errorf("%d pods on %s, want %d", len(ni.Pods), name, want)
			}
		}
	})
}

// hookQueue runs before, once, at the first Add, before adding.
type hookQueue struct {
	Queue
	before func()
}

func (q *hookQueue) Add(p *v1.Pod) error {
	if f := q.before; f != nil {
		q.before = nil
		f()
	}
	return q.Queue.Add(p)
}

// TestSettleRequeueRacesTheInformer: the read finds a pod in doubt not
// bound, and as SettleInDoubt forgets and queues it, the informer (on its
// own goroutine) shows the pod deleted, or bound (by a write that the
// read just missed). Whichever goes first, the pod must not be left in
// the queue: a deleted pod would be scheduled, and could preempt, for
// nothing; a bound pod would be placed twice. The informer's handler is
// run while SettleInDoubt is about to add the pod to the queue, after it
// has found the pod unplaced.
func TestSettleRequeueRacesTheInformer(t *testing.T) {
	p := pod("p", 1000)
	for _, tc := range []struct {
		name       string
		informer   func(h *Handlers)
		wantPlaced bool
	}{
		{name: "deleted", informer: func(h *Handlers) { h.DeletePod(p) }},
		{name: "bound", informer: func(h *Handlers) { h.UpdatePod(p, boundTo(p, "n")) }, wantPlaced: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, err := schedq.New(QueueConfig())
				if err != nil {
					t.Fatal(err)
				}
				c := NewCache()
				hq := &hookQueue{Queue: q}
				h := &Handlers{Queue: hq, Cache: c, SchedulerName: "schedq"}
				h.AddNode(node("n", 1000))
				inDoubtOn(t, c, p, "n")
				d := c.InDoubt()
				if len(d) != 1 {
					t.Fatalf("in doubt: %v", d)
				}
				var informer sync.WaitGroup
				hq.before = func() {
					informer.Go(func() { tc.informer(h) })
					synctest.Wait() // the informer has run, or waits for SettleInDoubt
				}
				h.SettleInDoubt(d[0], p) // the read: not bound
				informer.Wait()
				key := framework.Key(p)
				_, placed := c.NodeOf(key)
				_, _, queued := q.Get(key)
				if queued || placed != tc.wantPlaced {
					t.Errorf("queued %v, placed %v; want not queued, placed %v", queued, placed, tc.wantPlaced)
				}
			})
		})
	}
}

// TestInDoubtOn: the node a binding in doubt holds its pod on; nothing
// for a pod merely assumed, or settled.
func TestInDoubtOn(t *testing.T) {
	c := NewCache()
	c.AddNode(node("n", 1000))
	p, q := pod("p", 100), pod("q", 100)
	inDoubtOn(t, c, p, "n")
	qi, err := framework.NewPodInfo(q)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Assume(qi, "n", nil); err != nil {
		t.Fatal(err)
	}
	if n, ok := c.InDoubtOn(framework.Key(p)); !ok || n != "n" {
		t.Errorf("p: %q, %v; want n, true", n, ok)
	}
	if _, ok := c.InDoubtOn(framework.Key(q)); ok {
		t.Errorf("q, assumed with its term going on, is reported in doubt")
	}
	c.settleInDoubt(p, nil, false)
	if _, ok := c.InDoubtOn(framework.Key(p)); ok {
		t.Errorf("p, settled bound, is still reported in doubt")
	}
}

// finishedOn is p bound to node and finished.
func finishedOn(p *v1.Pod, node string) *v1.Pod {
	cp := boundTo(p, node)
	cp.Status.Phase = v1.PodSucceeded
	return cp
}

// TestInDoubtBoundAndFinished: a pod in doubt that was bound and has
// finished by the time it is seen (the informer's watch was down, so one
// update shows both; or the read) holds no room: it is neither kept on
// its node nor queued.
func TestInDoubtBoundAndFinished(t *testing.T) {
	p := pod("p", 1000)
	for _, tc := range []struct {
		name   string
		settle func(h *Handlers, d InDoubt)
	}{
		{name: "informer", settle: func(h *Handlers, _ InDoubt) { h.UpdatePod(p, finishedOn(p, "n")) }},
		{name: "read", settle: func(h *Handlers, d InDoubt) { h.SettleInDoubt(d, finishedOn(p, "n")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.h.AddNode(node("n", 1000))
			inDoubtOn(t, f.c, p, "n")
			d := f.c.InDoubt()
			if len(d) != 1 {
				t.Fatalf("in doubt: %v", d)
			}
			tc.settle(f.h, d[0])
			key := framework.Key(p)
			if n, placed := f.c.NodeOf(key); placed {
				t.Errorf("finished, still holds its room on %q", n)
			}
			if _, _, queued := f.q.Get(key); queued {
				t.Errorf("finished, queued")
			}
		})
	}
}

// TestBindingsInDoubtGauge: scheduler_bindings_in_doubt counts the pods
// held in doubt, not the other assumptions, and drops as they settle.
func TestBindingsInDoubtGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFixture(t)
	if err := RegisterInDoubt(reg, f.c); err != nil {
		t.Fatal(err)
	}
	f.h.AddNode(node("n", 1000))
	p, q := pod("p", 100), pod("q", 100)
	inDoubtOn(t, f.c, p, "n")
	qi, err := framework.NewPodInfo(q)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.Assume(qi, "n", nil); err != nil {
		t.Fatal(err)
	}
	gauge := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil || len(mfs) != 1 || mfs[0].GetName() != "scheduler_bindings_in_doubt" {
			t.Fatalf("gathered %v, %v", mfs, err)
		}
		return mfs[0].GetMetric()[0].GetGauge().GetValue()
	}
	if v := gauge(); v != 1 {
		t.Errorf("%v in doubt, want 1 (p; q is merely assumed)", v)
	}
	f.h.SettleInDoubt(f.c.InDoubt()[0], p)
	if v := gauge(); v != 0 {
		t.Errorf("%v in doubt once settled, want 0", v)
	}
}

// TestSettledBoundElsewhereWakesForTheRoomItLeft: moved to the node it is
// bound to, a pod in doubt frees the room it held on the node of our
// binding: a pod parked for want of that room is woken, as for an
// assigned pod's deletion there.
func TestSettledBoundElsewhereWakesForTheRoomItLeft(t *testing.T) {
	f := newFixture(t)
	f.h.AddNode(node("n", 1000))
	f.h.AddNode(node("m", 1000, v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule}))
	p := pod("p", 1000)
	inDoubtOn(t, f.c, p, "n")
	w := pod("w", 1000)
	f.h.AddPod(w)
	info, err := f.q.Pop(ended)
	if err != nil {
		t.Fatal(err)
	}
	f.s.ScheduleOne(context.Background(), info)
	if loc := f.where("w"); loc != schedq.InUnschedulable {
		t.Fatalf("w in %v, want parked: n is full, m tainted", loc)
	}
	f.h.SettleInDoubt(f.c.InDoubt()[0], boundTo(p, "m"))
	if loc := f.where("w"); loc == schedq.InUnschedulable {
		t.Errorf("w still parked: the room p left on n was not offered")
	}
}
