package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// fakeServer is a fake API server for the concurrent test: it keeps which
// pods are bound where and which were deleted, and reports each change to
// the handlers from one goroutine of its own (run), in order, as a pod
// informer would.
type fakeServer struct {
	h      *Handlers
	events chan func()

	mu      sync.Mutex
	pods    map[types.NamespacedName]*v1.Pod // live pods, as the server has them
	deleted map[types.NamespacedName]bool
	binds   int
	changes chan struct{} // closed, and replaced, at each change of pods (changed)
}

func (c *fakeServer) add(p *v1.Pod) {
	c.mu.Lock()
	c.pods[framework.Key(p)] = p
	c.changed()
	c.mu.Unlock()
	c.events <- func() { c.h.AddPod(p) }
}

// run delivers the pod events until ctx ends.
func (c *fakeServer) run(ctx context.Context) {
	for {
		select {
		case f := <-c.events:
			f()
		case <-ctx.Done():
			return
		}
	}
}

// bind binds a pod, as the pods/binding subresource does: it fails if the
// pod is gone or bound already.
func (c *fakeServer) bind(p *v1.Pod, node string) error {
	c.mu.Lock()
	old, ok := c.pods[framework.Key(p)]
	if !ok || old.UID != p.UID {
		c.mu.Unlock()
		return fmt.Errorf("pod %s not found", p.Name)
	}
	if old.Spec.NodeName != "" {
		c.mu.Unlock()
		return fmt.Errorf("pod %s is already bound to %s", p.Name, old.Spec.NodeName)
	}
	bound := old.DeepCopy()
	bound.Spec.NodeName = node
	c.pods[framework.Key(p)] = bound
	c.binds++
	c.changed()
	c.events <- func() { c.h.UpdatePod(old, bound) }
	c.mu.Unlock()
	return nil
}

func (c *fakeServer) delete(key types.NamespacedName) {
	c.mu.Lock()
	p, ok := c.pods[key]
	if ok {
		delete(c.pods, key)
		c.deleted[key] = true
		c.changed()
		c.events <- func() { c.h.DeletePod(p) }
	}
	c.mu.Unlock()
}

// changed wakes those that await a change of the pods. Call it under mu.
func (c *fakeServer) changed() {
	if c.changes != nil {
		close(c.changes)
	}
	c.changes = make(chan struct{})
}

// await waits until cond, called under mu, holds, or ctx ends, and
// reports whether cond held. It checks cond again at each change of the
// pods (changed), not on the clock.
func (c *fakeServer) await(ctx context.Context, cond func() bool) bool {
	for {
		c.mu.Lock()
		ok := cond()
		if c.changes == nil {
			c.changes = make(chan struct{})
		}
		changes := c.changes
		c.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changes:
		case <-ctx.Done():
			return false
		}
	}
}

// asyncBinder binds in a goroutine of its own, as APIBinder does.
type asyncBinder struct{ c *fakeServer }

func (b asyncBinder) Bind(_ context.Context, p *v1.Pod, node string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	go func() { done(b.c.bind(p, node)) }()
}

// asyncEvictor deletes the victims from a goroutine of its own.
type asyncEvictor struct{ c *fakeServer }

func (asyncEvictor) Wait() {} // no test ends a term with it

func (e asyncEvictor) Preempt(_ context.Context, p Preemption, done func([]error)) {
	go func() {
		for _, v := range p.Victims {
			e.c.delete(framework.Key(v))
		}
		done(nil)
	}()
}

// TestConcurrentCacheQueueBudgetCycle drives the real cache, queue, wake
// budget and scheduling cycle from several goroutines at once: nodes
// arriving, pods created (some of high priority, which preempt), bound
// pods deleted, bindings and evictions completing asynchronously, the
// queue's backoff flushes and the scheduling loop. Every pod must end
// bound or evicted, well before the deadline, and no node may hold more
// than its allocatable.
func TestConcurrentCacheQueueBudgetCycle(t *testing.T) {
	const (
		nodes, nodeCPU = 40, 4000
		low, high      = 150, 20
	)
	c := NewCache()
	cfg := testQueueConfig(t)
	cfg.Budget = WakeBudget(c)
	q, err := schedq.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	cl := &fakeServer{h: h, events: make(chan func(), 1024), pods: map[types.NamespacedName]*v1.Pod{}, deleted: map[types.NamespacedName]bool{}}
	s := mustNew(t, q, c, asyncBinder{cl}, &lockedReporter{}, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err := s.EnablePreemption(PreemptionOptions{Evictor: asyncEvictor{cl}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	runLoops(ctx, &wg, q, cl, s)
	var producers sync.WaitGroup
	producers.Add(3)
	go func() { // the node informer
		defer producers.Done()
		for i := range nodes {
			h.AddNode(node(fmt.Sprint("n", i), nodeCPU))
		}
	}()
	go func() { // the pod informer: low-priority pods, then high
		defer producers.Done()
		for i := range low {
			cl.add(prioPod(fmt.Sprint("low", i), 1000, 1))
		}
		for i := range high {
			cl.add(prioPod(fmt.Sprint("high", i), 1000, 100))
		}
	}()
	go func() { // churn: after every 12 bindings, delete a bound low pod
		defer producers.Done()
		// 12 deleted: 158 pods left for 160 cpus, whatever the order.
		for n := range 12 {
			cl.await(ctx, func() bool { return cl.binds >= (n+1)*12 })
			if key, ok := cl.boundLow(); ok {
				cl.delete(key)
			}
		}
	}()
	producers.Wait()
	// Progress: every pod bound or deleted before the deadline, checked
	// at each change of the server's pods.
	if !cl.await(ctx, cl.settledLocked) {
		cl.mu.Lock()
		for _, it := range q.Dump().Items {
			t.Logf("%+v", it)
		}
		for i := range nodes {
			a, u, n, _ := c.NodeRoom(fmt.Sprint("n", i))
			t.Logf("n%d: %d/%d cpu, %d pods", i, u.MilliCPU, a.MilliCPU, n)
		}
		c.View(func(snap framework.Snapshot) {
			for _, ni := range snap.Nodes() {
				var names []string
				for _, p := range ni.Pods {
					names = append(names, p.Pod.Name)
				}
				t.Logf("cache %s: %d %v", ni.Name(), ni.Requested.MilliCPU, names)
			}
		})
		for k, p := range cl.pods {
			if p.Spec.NodeName == "" {
				t.Logf("server: %v pending", k)
			}
		}
		t.Logf("deleted %v", cl.deleted)
		t.Fatalf("no progress: %d binds, %d deleted; queue %+v", cl.binds, len(cl.deleted), q.Counts())
	}
	cancel()
	wg.Wait()
	q.Close()
	cl.checkRoom(t, nodes, nodeCPU)
}

// boundLow returns a bound pod of low priority, if there is one.
func (c *fakeServer) boundLow() (types.NamespacedName, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, p := range c.pods {
		if p.Spec.NodeName != "" && framework.Priority(p) < 100 {
			return k, true
		}
	}
	return types.NamespacedName{}, false
}

// settledLocked reports whether every live pod is bound. Call it under
// mu.
func (c *fakeServer) settledLocked() bool {
	for _, p := range c.pods {
		if p.Spec.NodeName == "" {
			return false
		}
	}
	return true
}

// checkRoom fails if a node holds more cpu than its allocatable.
func (c *fakeServer) checkRoom(t *testing.T, nodes int, cpu int64) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	used := map[string]int64{}
	for _, p := range c.pods {
		used[p.Spec.NodeName] += 1000
	}
	for n, u := range used {
		if u > cpu {
			t.Errorf("node %s holds %dm of %dm cpu", n, u, cpu)
		}
	}
	if len(used) > nodes {
		t.Errorf("pods on %d nodes, of %d", len(used), nodes)
	}
}

// lockedReporter is a Reporter safe for the concurrent test.
type lockedReporter struct {
	mu sync.Mutex
	n  int
}

func (r *lockedReporter) Unschedulable(context.Context, *v1.Pod, string, string, func() FailureRecord) {
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
}
func (r *lockedReporter) Scheduled(context.Context, *v1.Pod, string)           {}
func (r *lockedReporter) Warn(context.Context, runtime.Object, string, string) {}

// runLoops runs q's Run, srv's run and a scheduling loop (q.Pop, then
// s.ScheduleOne) on goroutines of their own, each added to wg, until ctx
// ends.
func runLoops(ctx context.Context, wg *sync.WaitGroup, q *schedq.Queue[types.NamespacedName, *v1.Pod], srv *fakeServer, s *Scheduler) {
	wg.Go(func() { q.Run(ctx) })
	wg.Go(func() { srv.run(ctx) })
	wg.Go(func() {
		for {
			info, err := q.Pop(ctx)
			if err != nil {
				return
			}
			s.ScheduleOne(ctx, info)
		}
	})
}
