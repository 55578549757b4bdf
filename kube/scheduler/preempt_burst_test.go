package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// laggingEvictor reports each preemption done as soon as its requests
// would have returned, and delivers the victims' deletions later, through
// the fake server's informer goroutine, as a real informer lags behind
// the API server. It counts the distinct victims.
type laggingEvictor struct {
	c *fakeServer

	mu      sync.Mutex
	victims map[types.NamespacedName]bool
}

func (e *laggingEvictor) Wait() {} // no test ends a term with it

func (e *laggingEvictor) Preempt(_ context.Context, p Preemption, done func([]error)) {
	victims := p.Victims
	e.mu.Lock()
	for _, v := range victims {
		e.victims[framework.Key(v)] = true
	}
	e.mu.Unlock()
	go func() {
		done(nil)
		for _, v := range victims {
			e.c.delete(framework.Key(v))
		}
	}()
}

// TestPreemptionBurstEvictsTheMinimalSet: 60 one-cpu preemptors arrive at
// once on 20 full nodes of 4 one-cpu pods of lower priority; the real
// cycle, queue and cache run concurrently with asynchronous evictions,
// bindings and informer events. Exactly 60 victims must be evicted: none
// for room that an eviction in flight already frees.
func TestPreemptionBurstEvictsTheMinimalSet(t *testing.T) {
	burstPreemption(t, nil, nil)
}

// burstPreemption runs TestPreemptionBurstEvictsTheMinimalSet on fw's
// plugins (the default profile's if fw is nil); churn,
// if set, runs meanwhile on a goroutine of its own, until its context
// ends, with the handlers.
func burstPreemption(t *testing.T, fw *profile.Framework, churn func(context.Context, *Handlers)) {
	const nodes, perNode, preemptors = 20, 4, 60
	c := NewCache()
	if fw == nil {
		fw = defaultFramework(t)
	}
	cfg := QueueConfig()
	if err := UseFrameworkHints(context.Background(), &cfg, fw, klog.Background()); err != nil {
		t.Fatal(err)
	}
	cfg.Budget = WakeBudget(c)
	q, err := schedq.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	srv := &fakeServer{h: h, events: make(chan func(), 4096), pods: map[types.NamespacedName]*v1.Pod{}, deleted: map[types.NamespacedName]bool{}}
	ev := &laggingEvictor{c: srv, victims: map[types.NamespacedName]bool{}}
	s := mustNew(t, q, c, asyncBinder{srv}, &lockedReporter{}, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(3, 4))})
	if err := s.EnablePreemption(PreemptionOptions{Evictor: ev}); err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		n := fmt.Sprint("n", i)
		h.AddNode(node(n, perNode*1000))
		for j := range perNode {
			p := runningPod(fmt.Sprintf("low-%d-%d", i, j), n, 1000, 1, t0.Add(time.Duration(j)*time.Second))
			srv.pods[framework.Key(p)] = p
			h.AddPod(p)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	if churn != nil {
		wg.Go(func() { churn(ctx, h) })
	}
	runLoops(ctx, &wg, q, srv, s)
	for i := range preemptors {
		srv.add(prioPod(fmt.Sprint("high", i), 1000, 100))
	}
	if !srv.await(ctx, srv.settledLocked) { // checked at each change of the server's pods
		srv.mu.Lock()
		t.Fatalf("not all preemptors bound: %d binds; queue %+v", srv.binds, q.Counts())
	}
	cancel()
	wg.Wait()
	q.Close()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if len(ev.victims) != preemptors {
		t.Fatalf("%d victims evicted for %d one-cpu preemptors, want %d", len(ev.victims), preemptors, preemptors)
	}
}
