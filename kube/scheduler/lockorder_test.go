package scheduler

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/profile"
)

// gateFilter is an out-of-tree filter that, once armed, signals entered
// and waits for release on its first call: it holds a cycle in the middle
// of its plugins.
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

func (g *gateFilter) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
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

func (r hookedRoom) Take(p *v1.Pod) bool {
	r.once.Do(func() { close(r.taking) })
	return r.Budget.Take(p)
}

// TestLockOrderCycleMoveWriter runs the interleaving that deadlocked
// when plugins ran under the cache's read lock: a cycle in the middle of
// its filters, which then reads the queue's nominations (its preemption
// check), a Move whose wake budget takes room under the queue's lock, and
// a writer (AddNode) of the cache. The plugins run holding no lock of
// schedq's, so the writer and the Move finish while the cycle is held,
// and the cycle finishes once released.
func TestLockOrderCycleMoveWriter(t *testing.T) {
	gate := newGateFilter()
	fw := gatedFramework(t, gate)
	c := NewCache()
	cfg := QueueConfig()
	if err := UseFrameworkHints(context.Background(), &cfg, fw, klog.Background()); err != nil {
		t.Fatal(err)
	}
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
	s := mustNew(t, q, c, &syncBinder{}, &recReporter{}, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 1))})
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
	go func() { // the cycle: filters, then preemption reads nominations
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
	wait(gate.entered, "the cycle to enter its filters")
	go func() { // a writer of the cache
		c.AddNode(node("n2", 1000))
		done <- "writer"
	}()
	go func() { // a Move: the wake budget takes room under the queue's lock
		if err := q.Move(clusterevent.NodeAdd, nil, node("n3", 4000), nil); err != nil {
			t.Errorf("move: %v", err)
		}
		done <- "move"
	}()
	wait(taking, "the budget to take room")
	finished := map[string]bool{}
	collect := func(n int) {
		for len(finished) < n {
			select {
			case who := <-done:
				finished[who] = true
			case <-deadline:
				t.Fatalf("deadlock: only %v finished", finished)
			}
		}
	}
	collect(2)
	if finished["cycle"] {
		t.Fatal("the cycle finished while its filter was held")
	}
	close(gate.released)
	collect(3)
	q.Close()
}

// gatedFramework is kube-scheduler's default profile with gate as its
// first filter (first of MultiPoint: a filter enabled at Filter alone
// would run after the default ones, which reject the cycle's pod first),
// closed when t ends.
func gatedFramework(t *testing.T, gate *gateFilter) *profile.Framework {
	t.Helper()
	cfg, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := &cfg.Profiles[0]
	prof.Plugins.MultiPoint.Enabled = append([]config.Plugin{{Name: "Gate"}}, prof.Plugins.MultiPoint.Enabled...)
	extra := frameworkruntime.Registry{"Gate": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return gate, nil }}
	fw := frameworkWith(t, prof, extra)
	return fw
}
