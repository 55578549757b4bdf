package scheduler

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// gateFilter is a test filter that, once armed, signals entered and waits
// for release on its first call: it holds a cycle inside the cache's View.
type gateFilter struct {
	mu       sync.Mutex
	armed    bool
	entered  chan struct{}
	released chan struct{}
}

func newGateFilter() *gateFilter {
	return &gateFilter{entered: make(chan struct{}), released: make(chan struct{})}
}

func (*gateFilter) Name() string { return "Gate" }

func (g *gateFilter) Filter(context.Context, *framework.CycleState, *framework.PodInfo, *framework.NodeInfo) *framework.Status {
	g.mu.Lock()
	armed := g.armed
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(g.entered)
		<-g.released
	}
	return nil
}

// hookedRoom is a wake budget's room that signals taking the first time
// the queue offers it a pod, under the queue's lock.
type hookedRoom struct {
	schedq.Budget[*v1.Pod]
	once   *sync.Once
	taking chan struct{}
}

func (r hookedRoom) Key() string { return r.Budget.(schedq.Keyed).Key() }

func (r hookedRoom) Take(p *v1.Pod) bool {
	r.once.Do(func() { close(r.taking) })
	return r.Budget.Take(p)
}

// writerWaiting polls, until the deadline, for a writer waiting on the
// cache's lock (TryRLock fails while one waits).
func writerWaiting(t *testing.T, c *Cache, deadline <-chan time.Time) {
	t.Helper()
	for {
		if !c.mu.TryRLock() {
			return
		}
		c.mu.RUnlock()
		select {
		case <-deadline:
			t.Fatal("the writer never waited on the cache")
		default:
			runtime.Gosched()
		}
	}
}

// TestLockOrderCycleMoveWriter runs the interleaving that deadlocked: a
// cycle inside the cache's View that then reads the queue's nominations
// (its preemption check), a Move whose wake budget takes room under the
// queue's lock, and a writer (AddNode) waiting on the cache's lock. All
// three must finish.
func TestLockOrderCycleMoveWriter(t *testing.T) {
	gate := newGateFilter()
	profile := framework.Profile{
		Filter:  []framework.FilterPlugin{gate, fitCPU{}},
		Enqueue: []framework.EnqueueExtensions{fitCPU{}},
	}
	c := NewCache()
	cfg := QueueConfig(profile)
	inner := WakeBudget(c)
	var once sync.Once
	taking := make(chan struct{})
	cfg.Budget = func(ev schedq.Event, oldObj, newObj any) (schedq.Budget[*v1.Pod], bool) {
		b, ok := inner(ev, oldObj, newObj)
		if !ok {
			return nil, false
		}
		return hookedRoom{Budget: b, once: &once, taking: taking}, true
	}
	q, err := schedq.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Not closed on failure: Close would wait for the deadlocked lock.
	h := &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	s := New(q, c, &syncBinder{}, &recReporter{}, Options{Profile: profile, Rand: rand.New(rand.NewPCG(1, 1))})
	if err := s.EnablePreemption(PreemptionOptions{Evictor: &syncEvictor{}}); err != nil {
		t.Fatal(err)
	}
	h.AddNode(node("n1", 1000))
	// parked waits in the unschedulable pool for a node with room.
	h.AddPod(pod("parked", 2000))
	info, err := q.Pop(ended)
	if err != nil {
		t.Fatal(err)
	}
	if out := s.ScheduleOne(context.Background(), info); out.Result != Unschedulable {
		t.Fatalf("parked: %+v", out)
	}
	h.AddPod(prioPod("cycle", 2000, 10))
	info, err = q.Pop(ended)
	if err != nil {
		t.Fatal(err)
	}

	deadline := time.After(10 * time.Second)
	done := make(chan string, 3)
	gate.mu.Lock()
	gate.armed = true
	gate.mu.Unlock()
	go func() { // the cycle: filters under View, then preemption reads nominations
		s.ScheduleOne(context.Background(), info)
		done <- "cycle"
	}()
	wait := func(ch <-chan struct{}, what string) {
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	wait(gate.entered, "the cycle to enter View")
	go func() { // a writer: waits for the cycle's read lock
		c.AddNode(node("n2", 1000))
		done <- "writer"
	}()
	writerWaiting(t, c, deadline)
	go func() { // a Move: the wake budget takes room under the queue's lock
		if err := q.Move(clusterevent.NodeAdd, nil, node("n3", 4000), nil); err != nil {
			t.Errorf("move: %v", err)
		}
		done <- "move"
	}()
	wait(taking, "the budget to take room")
	close(gate.released)
	finished := map[string]bool{}
	for len(finished) < 3 {
		select {
		case who := <-done:
			finished[who] = true
		case <-deadline:
			t.Fatalf("deadlock: only %v finished", finished)
		}
	}
	q.Close()
}
