package app

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
	"github.com/schedq/schedq/kube/sim"
)

// listingQueue counts a queueView's full listings (Pending) and the
// largest number of pods one ExplainListed explained.
type listingQueue struct {
	queueView
	listings, explainCalls, maxExplained int
}

func (q *listingQueue) Pending(o schedq.PendingOptions[*v1.Pod]) schedq.PendingPage[types.NamespacedName] {
	q.listings++
	return q.queueView.Pending(o)
}

func (q *listingQueue) ExplainListed(items []schedq.PendingItem[types.NamespacedName]) {
	q.explainCalls++
	q.maxExplained = max(q.maxExplained, len(items))
	q.queueView.ExplainListed(items)
}

// copyQueueByPages is copyQueue as it was until 2026-11-30: a listing of
// the whole queue, explaining one page of copyChunk, per page. The
// reference the one listing must copy the same as.
func (l *liveState) copyQueueByPages(cs *CopyStats) ([]string, map[string]string, map[string]sim.QueuedPod) {
	var order []string
	nominated := map[string]string{}
	queued := map[string]sim.QueuedPod{}
	listed := map[string]bool{}
	for off := 0; ; off += copyChunk {
		var page schedq.PendingPage[types.NamespacedName]
		l.hold(&cs.MaxQueueHold, &cs.QueueHolds, func() {
			page = l.queue.Pending(schedq.PendingOptions[*v1.Pod]{Offset: off, Limit: copyChunk})
		})
		for _, it := range page.Items {
			key := it.Key.String()
			if listed[key] {
				continue
			}
			listed[key] = true
			order = append(order, key)
			if it.NominatedTarget != "" {
				nominated[key] = it.NominatedTarget
			}
			if qp, ok := sim.QueuedOf(it.Explanation); ok {
				queued[key] = qp
			}
		}
		if off+copyChunk >= page.Total {
			return order, nominated, queued
		}
	}
}

// bigQueue is a queue of n pods in each of activeQ, backoffQ, the
// unschedulable pods, the gated ones, and n members of groups of 10 (in
// activeQ), with every 7th pod of activeQ nominated.
func bigQueue(t *testing.T, n int) *schedq.Queue[types.NamespacedName, *v1.Pod] {
	t.Helper()
	clk := testingclock.NewFakeClock(liveNow)
	cfg := scheduler.QueueConfig()
	cfg.Clock = clk
	cfg.PreEnqueue = []schedq.PreEnqueue[*v1.Pod]{{Name: "SchedulingGates", Admit: func(p *v1.Pod) bool { return len(p.Spec.SchedulingGates) == 0 }}}
	q, err := schedq.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	add := func(name string, prio int32, edit func(*v1.Pod)) {
		p := testPod(name, "schedq", "1")
		p.Spec.Priority = &prio
		if edit != nil {
			edit(p)
		}
		if err := q.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	// Parked first: each is popped and fails, by error (backoff) or by
	// a plugin (unschedulable).
	for i := range 2 * n {
		add(fmt.Sprintf("f%05d", i), int32(i%5), nil)
		clk.Step(1e6) // distinct timestamps, as the queue's order keeps them
		a, err := q.Pop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f := schedq.Failure{}
		if i%2 == 1 {
			f = schedq.Failure{RejectedBy: []string{"NodeResourcesFit"}, Message: "0/1 nodes are available: 1 Insufficient cpu."}
		}
		if err := q.Requeue(a, f); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		add(fmt.Sprintf("a%05d", i), int32(i%3), nil)
		add(fmt.Sprintf("g%05d", i), 0, func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "wait"}} })
		group := fmt.Sprintf("pg%04d", i/10)
		if i%10 == 0 {
			if err := q.SetGroup("default/"+group, schedq.GroupSpec{MinCount: 10}); err != nil {
				t.Fatal(err)
			}
		}
		add(fmt.Sprintf("m%05d", i), 0, func(p *v1.Pod) { p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group} })
		if i%7 == 0 {
			if err := q.Nominate(types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("a%05d", i)}, "n0"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return q
}

// TestLiveStateCopyOfQueueListsOnce: the forecast's copy of a queue of
// 3,000 pods in each place lists the queue's order once, explains the
// pods copyChunk at a time, and copies exactly what the listing of the
// whole queue per page of copyChunk copied (until 2026-11-30:
// O(queued²/copyChunk), each hold O(queued)).
func TestLiveStateCopyOfQueueListsOnce(t *testing.T) {
	const n = 3000
	q := bigQueue(t, n)
	c := q.Counts()
	for _, tc := range []struct {
		name string
		got  int
	}{
		{name: "activeQ", got: c.Active}, {name: "backoffQ", got: c.Backoff},
		{name: "unschedulable", got: c.Unschedulable}, {name: "gated", got: c.Gated},
	} {
		if tc.got < n {
			t.Fatalf("%s holds %d pods, want at least %d (%+v)", tc.name, tc.got, n, c)
		}
	}
	lq := &listingQueue{queueView: q}
	l := &liveState{queue: lq, clock: testingclock.NewFakeClock(liveNow)}
	var cs, oldCS CopyStats
	order, nominated, queued := l.copyQueue(&cs)
	listings, explainCalls, maxExplained := lq.listings, lq.explainCalls, lq.maxExplained
	wantOrder, wantNominated, wantQueued := l.copyQueueByPages(&oldCS)

	groups := 0
	for _, k := range order {
		if k[len("default/")] == 'm' {
			groups++
		}
	}
	t.Logf("%d pods listed (%d group members), %d with their place, %d nominated; %d holds of the queue's lock, %d before", len(order), groups, len(queued), len(nominated), cs.QueueHolds, oldCS.QueueHolds)
	if len(order) < 4*n || len(nominated) == 0 {
		t.Fatalf("copied %d pods, %d nominated: want the queue's %d at least, and some nominated", len(order), len(nominated), 4*n)
	}
	if !reflect.DeepEqual(order, wantOrder) {
		t.Errorf("the order differs from the listing per page's (%d pods, want %d)", len(order), len(wantOrder))
	}
	if !reflect.DeepEqual(nominated, wantNominated) {
		t.Errorf("the nominations differ: %d, want %d", len(nominated), len(wantNominated))
	}
	if !reflect.DeepEqual(queued, wantQueued) {
		t.Errorf("the pods' places and histories differ: %d, want %d", len(queued), len(wantQueued))
	}
	chunks := int(math.Ceil(float64(len(order)) / copyChunk))
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{name: "full listings", got: listings, want: 1},
		{name: "explanations by chunk", got: explainCalls, want: chunks},
		{name: "holds of the queue's lock", got: cs.QueueHolds, want: 1 + chunks},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if maxExplained > copyChunk {
		t.Errorf("one hold explained %d pods, want at most %d", maxExplained, copyChunk)
	}
}
