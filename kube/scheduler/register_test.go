package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/schedq/schedq"
)

// TestRegisterSyncedMeansQueued checks the start-up contract: once the
// function Register returns reports true, every pending pod of the initial
// list is in the queue and every node is in the cache. The informers' own
// HasSynced does not promise this: it turns true when their stores are
// full, while our handlers may still be behind, and a scheduler that
// popped then would see the first pods delivered, not the highest-priority
// ones (the e2e TestPriorityUnderPressure failed that way on CI).
//
// The pod handler is held inside the queue's Add (a PreEnqueue check that
// blocks) until the pod informer reports its store synced; synced() must
// still be false then.
func TestRegisterSyncedMeansQueued(t *testing.T) {
	const pods, nodes = 300, 20
	var objs []runtime.Object
	for i := range nodes {
		objs = append(objs, node(fmt.Sprintf("n%d", i), 1000))
	}
	for i := range pods {
		objs = append(objs, pod(fmt.Sprintf("p%d", i), 100))
	}
	held, release := make(chan struct{}), make(chan struct{})
	cfg := testQueueConfig(t)
	first := true
	cfg.PreEnqueue = append(cfg.PreEnqueue, schedq.PreEnqueue[*v1.Pod]{Name: "Hold", Admit: func(*v1.Pod) bool {
		if first {
			first = false
			close(held)
			<-release
		}
		return true
	}})
	q, err := schedq.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &Handlers{Queue: q, Cache: NewCache(), SchedulerName: "schedq"}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	podInf, nodeInf := factory.Core().V1().Pods().Informer(), factory.Core().V1().Nodes().Informer()
	synced, err := h.Register(podInf, nodeInf, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if synced() {
		t.Fatal("synced before the informers started")
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	// In this order on the way out: let the handler go, stop the
	// informers, and wait for them.
	defer factory.Shutdown()
	defer cancel()
	var once sync.Once
	unhold := func() { once.Do(func() { close(release) }) }
	defer unhold()

	<-held
	if !cache.WaitForCacheSync(ctx.Done(), podInf.HasSynced, nodeInf.HasSynced) {
		t.Fatal("informers never synced")
	}
	if synced() {
		t.Fatal("synced while the pod handler was still adding the initial list")
	}
	unhold()
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		t.Fatal("handlers never synced")
	}
	if c := q.Counts(); c.Active != pods {
		t.Errorf("synced with %d of %d pods in activeQ: %+v", c.Active, pods, c)
	}
	if n := h.Cache.NodeCount(); n != nodes {
		t.Errorf("synced with %d of %d nodes in the cache", n, nodes)
	}
}
