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

	"github.com/schedq/schedq"
)

// TestConcurrentGangGate drives the gang gate (UseGangGate) on the real
// concurrent path: gangs' members arrive on the pod informer's
// goroutine, in an order shuffled across gangs, some of them bound
// already (as a previous leader left them), while their PodGroups
// arrive on a goroutine of their own, bindings complete on goroutines
// of their own and the scheduling loop runs. The gate reads the members'
// tally under the queue's lock while the handlers and the cache write
// it: under -race this checks the tally's lock, and the deadline checks
// that no gang stays gated with its members all arrived (a lift lost
// between the tally and the move would hold it until the queue's check
// of gated pods, 5 minutes on).
func TestConcurrentGangGate(t *testing.T) {
	const (
		nodes, nodeCPU = 10, 4000
		gangs, members = 8, 4
	)
	c := NewCache()
	cfg := testQueueConfig(t)
	UseGangGate(&cfg, c)
	cfg.Budget = WakeBudget(c)
	q, err := schedq.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	cl := &fakeServer{h: h, events: make(chan func(), 1024), pods: map[types.NamespacedName]*v1.Pod{}, deleted: map[types.NamespacedName]bool{}}
	s := mustNew(t, q, c, asyncBinder{cl}, &lockedReporter{}, Options{Rand: rand.New(rand.NewPCG(3, 4))})
	for i := range nodes {
		h.AddNode(node(fmt.Sprint("n", i), nodeCPU))
	}
	var pods []*v1.Pod
	for g := range gangs {
		group := fmt.Sprint("g", g)
		for m := range members {
			p := memberPod(fmt.Sprintf("%s-%d", group, m), group, 1000)
			if m == 0 && g%2 == 0 { // bound already, by a previous leader
				p.Spec.NodeName, p.Status.Phase = fmt.Sprint("n", g), v1.PodRunning
			}
			pods = append(pods, p)
		}
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	rnd.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	runLoops(ctx, &wg, q, cl, s)
	var producers sync.WaitGroup
	producers.Add(2)
	go func() { // the pod informer
		defer producers.Done()
		for _, p := range pods {
			cl.add(p)
		}
	}()
	go func() { // the PodGroup informer
		defer producers.Done()
		for g := range gangs {
			h.AddPodGroup(podGroup(fmt.Sprint("g", g), members-1+int32(g%2), 0))
		}
	}()
	producers.Wait()
	if !cl.await(ctx, cl.settledLocked) {
		cl.mu.Lock()
		for _, it := range q.Dump().Items {
			t.Logf("%+v", it)
		}
		cl.mu.Unlock()
		t.Fatalf("not every member bound before the deadline: %d binds; queue %+v", cl.binds, q.Counts())
	}
	cancel()
	wg.Wait()
	q.Close()
	cl.checkRoom(t, nodes, nodeCPU)
	for g := range gangs {
		group := fmt.Sprint("default/g", g)
		if known, _, _ := c.members.of(group); known != members {
			t.Errorf("gang %s: %d members known once all are bound, want %d", group, known, members)
		}
	}
}
