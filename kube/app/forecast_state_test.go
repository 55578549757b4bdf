package app

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/schedq/schedq"
)

// bindingStore is a pod store in which a pod binds while it is being
// read: the moment a copy of the live state reads the pod informer.
type bindingStore struct {
	cache.Store
	once sync.Once
	bind func()
}

func (s *bindingStore) List() []any {
	s.once.Do(s.bind)
	return s.Store.List()
}

// TestLiveStateCopyOfPodBoundMeanwhile: a pending pod that the scheduler
// binds while the state is copied (assumed in the cache, then seen bound
// by the pod informer) is in the copy, running on its node, not lost
// between the cache's copy and the pod informer's.
func TestLiveStateCopyOfPodBoundMeanwhile(t *testing.T) {
	l := newLiveCluster(t, 1)
	p := l.pod("p", "1", "1h")
	l.pending(p)
	pods := &bindingStore{Store: l.pods, bind: func() {
		b := p.DeepCopy()
		b.Spec.NodeName = "n0"
		if err := l.cache.AddPod(b); err != nil {
			t.Error(err)
		}
		if err := l.pods.Update(b); err != nil {
			t.Error(err)
		}
	}}
	ls := &liveState{queue: l.queue, cache: l.cache, pods: pods, namespaces: l.nss, groups: l.groups,
		objects: []cache.Store{l.objs}, schedulerName: "schedq", clock: l.clk}
	st, _ := ls.copy()
	if len(st.Running) != 1 || st.Running[0].Pod.Name != "p" || st.Running[0].Pod.Spec.NodeName != "n0" || len(st.Pending) != 0 {
		t.Fatalf("%d running, %d pending; want p running on n0, as it is by the end of the copy", len(st.Running), len(st.Pending))
	}
	if err := checkCopy(st, map[types.UID]string{p.UID: "default/p"}, oursIn(l.pods)); err != nil {
		t.Error(err)
	}
}

// TestLiveStateCopiesBudgets: the state a live forecast starts from
// carries the PodDisruptionBudgets its preemption respects, so that a
// forecast's or a what-if's preemption spares the same pods.
func TestLiveStateCopiesBudgets(t *testing.T) {
	l := newLiveCluster(t, 1)
	b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}}
	ls := &liveState{queue: l.queue, cache: l.cache, pods: l.pods, namespaces: l.nss, groups: l.groups,
		objects: []cache.Store{l.objs}, schedulerName: "schedq", clock: l.clk,
		budgets: func() []*policyv1.PodDisruptionBudget { return []*policyv1.PodDisruptionBudget{b} }}
	if st, _ := ls.copy(); len(st.Budgets) != 1 || st.Budgets[0] != b {
		t.Errorf("budgets %v, want db", st.Budgets)
	}
}

// TestLiveStateCopiesParkedPods: the copy says how the queue holds each
// pending pod (sim.ForecastState.Queued): a pod parked after a failed
// attempt with the plugins that rejected it, its queue timestamp and its
// counts, so that the forecast parks it too instead of trying it again
// first, and backs it off as long when it fails again; a pod waiting in
// waiting in activeQ as it waits there, never tried.
func TestLiveStateCopiesParkedPods(t *testing.T) {
	l := newLiveCluster(t, 1)
	big, small := l.pod("big", "8", ""), l.pod("small", "1", "")
	l.pending(big)
	l.pending(small)
	a, err := l.queue.Pop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l.clk.Step(time.Second) // the queue runs on the cluster's clock
	failed := l.clk.Now()
	if err := l.queue.Requeue(a, schedq.Failure{RejectedBy: []string{"NodeResourcesFit"}, Message: "0/1 nodes are available: 1 Insufficient cpu."}); err != nil {
		t.Fatal(err)
	}
	ls := &liveState{queue: l.queue, cache: l.cache, pods: l.pods, namespaces: l.nss, groups: l.groups,
		objects: []cache.Store{l.objs}, schedulerName: "schedq", clock: l.clk}
	st, _ := ls.copy()
	if len(st.Pending) != 2 {
		t.Fatalf("%d pending, want big and small", len(st.Pending))
	}
	qp, ok := st.Queued[big.UID]
	if !ok || qp.Location != schedq.InUnschedulable || !slices.Equal(qp.RejectedBy, []string{"NodeResourcesFit"}) ||
		!qp.Timestamp.Equal(failed) || qp.Attempts != 1 || qp.UnschedulableCount != 1 {
		t.Errorf("big queued %v (%+v), want parked by NodeResourcesFit at its failure (%v), after one attempt that failed", ok, qp, failed)
	}
	if qp, ok := st.Queued[small.UID]; !ok || qp.Location != schedq.InActive || qp.Attempts != 0 || len(st.Queued) != 2 {
		t.Errorf("small queued %v (%+v), %d queued; want small in activeQ, never tried", ok, qp, len(st.Queued))
	}
}

// TestQueueRunsOnTheOptionsClock: the scheduler's queue stamps a failed
// attempt with Options.Clock, the clock the live state's copy takes its
// instant from, so that a parked pod's timestamp in a forecast's state
// is never ahead of the state's own instant.
func TestQueueRunsOnTheOptionsClock(t *testing.T) {
	clk := testingclock.NewFakeClock(liveNow)
	o := Options{Clock: clk}
	q, err := schedq.New(o.queueConfig())
	if err != nil {
		t.Fatal(err)
	}
	l := newLiveCluster(t, 1)
	if err := q.Add(l.pod("big", "8", "")); err != nil {
		t.Fatal(err)
	}
	a, err := q.Pop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	if err := q.Requeue(a, schedq.Failure{RejectedBy: []string{"NodeResourcesFit"}}); err != nil {
		t.Fatal(err)
	}
	x, err := q.Explain(types.NamespacedName{Namespace: "default", Name: "big"})
	if err != nil || !x.Timestamp.Equal(liveNow.Add(time.Minute)) {
		t.Errorf("queue timestamp %v (%v), want the options' clock's %v", x.Timestamp, err, liveNow.Add(time.Minute))
	}
}

// TestLiveStateCopiesTheQueuesNominations: a queued pod's nomination in
// the copy is the queue's, which the live scheduler counts, not a node
// its status still names after the queue dropped the nomination (schedq
// does not clear the status of every nomination it drops): the forecast's
// handlers take the status's nomination over, and would reserve room on
// that node that the live scheduler does not.
func TestLiveStateCopiesTheQueuesNominations(t *testing.T) {
	for _, tc := range []struct {
		name, status, queue, want string
	}{
		{name: "the queue's, not the status's yet", queue: "n0", want: "n0"},
		{name: "both", status: "n0", queue: "n0", want: "n0"},
		{name: "the status's, dropped by the queue", status: "n0", want: ""},
		{name: "neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveCluster(t, 1)
			p := l.pod("p", "1", "")
			p.Status.NominatedNodeName = tc.status
			l.pending(p)
			if tc.queue != "" {
				if err := l.queue.Nominate(types.NamespacedName{Namespace: "default", Name: "p"}, tc.queue); err != nil {
					t.Fatal(err)
				}
			}
			ls := &liveState{queue: l.queue, cache: l.cache, pods: l.pods, namespaces: l.nss, groups: l.groups,
				objects: []cache.Store{l.objs}, schedulerName: "schedq", clock: l.clk}
			st, _ := ls.copy()
			if len(st.Pending) != 1 {
				t.Fatalf("%d pending, want p", len(st.Pending))
			}
			if st.Pending[0].Status.NominatedNodeName != tc.want {
				t.Fatalf("p nominated to %q, want %q", st.Pending[0].Status.NominatedNodeName, tc.want)
			}
			if p.Status.NominatedNodeName != tc.status {
				t.Errorf("the informer's pod changed: nominated to %q", p.Status.NominatedNodeName)
			}
		})
	}
}
