package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// versionLabel is the label of the update counter the pod informer of
// the hand-over test puts on each version of a pod.
const versionLabel = "update"

// versionOf is p's update counter (versionLabel), -1 if it has none.
func versionOf(p *v1.Pod) int {
	n, err := strconv.Atoi(p.Labels[versionLabel])
	if err != nil {
		return -1
	}
	return n
}

// updatingServer is the API server and pod informer of the hand-over
// test: it keeps each pod's newest version, and shows each update to the
// handlers in the order it made them (one lock per pod, held across the
// handler's call, as an informer delivers one object's events in order).
type updatingServer struct {
	h    *Handlers
	pods map[types.NamespacedName]*serverPod // written before the goroutines start
}

// serverPod is a pod of updatingServer: its newest version, under mu.
type serverPod struct {
	mu   sync.Mutex
	last *v1.Pod
}

// update makes the next version of the pod under key (its update
// counter one more, still unassigned) and shows it to the handlers.
func (s *updatingServer) update(key types.NamespacedName) {
	sp := s.pods[key]
	sp.mu.Lock()
	defer sp.mu.Unlock()
	old := sp.last
	n := versionOf(old) + 1
	u := old.DeepCopy()
	u.ResourceVersion = strconv.Itoa(n + 1)
	u.Labels = map[string]string{versionLabel: strconv.Itoa(n)}
	sp.last = u
	s.h.UpdatePod(old, u)
}

// newest is the version of the pod under key that the handlers saw last.
func (s *updatingServer) newest(key types.NamespacedName) *v1.Pod {
	sp := s.pods[key]
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.last
}

// churnPlugin updates the pod it schedules through the informer at
// PreFilter (before Assume: the queue records the update, the attempt
// being in flight) and at Reserve (once assumed: its binding-to-be holds
// it), on some cycles, a lone pod only (a group's trial runs its
// plugins under the cache's lock, which a handler takes: no plugin calls
// a handler); it rejects some pods at Reserve and at Permit.
type churnPlugin struct {
	srv   **updatingServer
	calls atomic.Int64
	// rejected counts the rejections at Reserve and Permit.
	rejected atomic.Int64
}

const churnName = "Churn"

func (*churnPlugin) Name() string { return churnName }

func (c *churnPlugin) PreFilter(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if c.calls.Add(1)%2 == 0 && framework.GroupName(p) == "" {
		(*c.srv).update(framework.Key(p))
	}
	return nil, nil
}

func (*churnPlugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (c *churnPlugin) Reserve(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) *fwk.Status {
	n := c.calls.Add(1)
	if n%3 != 0 && framework.GroupName(p) == "" {
		(*c.srv).update(framework.Key(p))
	}
	if n%5 == 0 {
		c.rejected.Add(1)
		return fwk.NewStatus(fwk.Unschedulable, "rejected at Reserve")
	}
	return nil
}

func (*churnPlugin) Unreserve(context.Context, fwk.CycleState, *v1.Pod, string) {}

func (c *churnPlugin) Permit(context.Context, fwk.CycleState, *v1.Pod, string) (*fwk.Status, time.Duration) {
	if c.calls.Add(1)%7 == 0 {
		c.rejected.Add(1)
		return fwk.NewStatus(fwk.Unschedulable, "rejected at Permit"), 0
	}
	return nil, 0
}

// failingBinder fails every binding it is given, from a goroutine of its
// own, as an API server that refuses them would (an error, or a refusal
// for a stale term, by turns); it takes the bindings in the order they
// came, so that a node's deletion may abort one that waits for its turn.
type failingBinder struct {
	ctx   context.Context
	binds chan func()
	wg    sync.WaitGroup
	n     atomic.Int64
	// aborted counts the bindings the node's deletion aborted; members,
	// the bindings of a group's members.
	aborted, members atomic.Int64
}

func (b *failingBinder) Bind(_ context.Context, p *v1.Pod, _ string, start func() bool, done func(error)) {
	n := b.n.Add(1)
	if framework.GroupName(p) != "" {
		b.members.Add(1)
	}
	b.wg.Add(1)
	b.binds <- func() {
		defer b.wg.Done()
		if !start() {
			b.aborted.Add(1)
			done(ErrNodeDeleted)
			return
		}
		if n%2 == 0 {
			done(staleTerm(p.Name))
			return
		}
		done(errors.New("etcd timeout"))
	}
}

// run runs the bindings until binds is closed.
func (b *failingBinder) run() {
	for f := range b.binds {
		f()
	}
}

// TestConcurrentHandOverKeepsTheNewestVersion drives, from several
// goroutines at once, pod updates through the handlers (from the pod
// informer, and from inside lone pods' cycles: before Assume and once
// assumed), gangs' cycles (which hold the pod events' lock as they end),
// deletions and re-creations of the nodes pods are assumed on (which abort
// their bindings), bindings that fail or are refused for a stale term,
// rejections at Reserve and Permit, and the scheduling loop. Once all have
// stopped, every pod must be queued (none lost, none left assumed or in
// flight) as the newest version the informer showed (by the update
// counter in its label), and every goroutine must have ended before the
// deadline (none stuck on the pod events' lock, the cache's or the
// queue's).
func TestConcurrentHandOverKeepsTheNewestVersion(t *testing.T) {
	const (
		pods, nodes = 18, 3
		members     = 3 // in each gang, of minCount 2
		// The informers go on until the bindings and rejections reach
		// these numbers.
		bindings, aborted, rejected = 600, 20, 150
	)
	gangs := []string{"g0", "g1"}
	var srv *updatingServer
	churn := &churnPlugin{srv: &srv}
	cfg, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := &cfg.Profiles[0]
	on := config.Plugin{Name: churnName}
	prof.Plugins.PreFilter.Enabled = append(prof.Plugins.PreFilter.Enabled, on)
	prof.Plugins.Reserve.Enabled = append(prof.Plugins.Reserve.Enabled, on)
	prof.Plugins.Permit.Enabled = append(prof.Plugins.Permit.Enabled, on)
	extra := frameworkruntime.Registry{churnName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return churn, nil
	}}
	fw := frameworkWith(t, prof, extra)
	qc := QueueConfig()
	if err := UseFrameworkHints(context.Background(), &qc, fw, klog.Background()); err != nil {
		t.Fatal(err)
	}
	qc.DisableBackoff = true // a failed pod is tried again at once: many attempts
	q, err := schedq.New(qc)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache()
	h := &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	srv = &updatingServer{h: h, pods: map[types.NamespacedName]*serverPod{}}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := &failingBinder{ctx: ctx, binds: make(chan func(), 4096)}
	s := mustNew(t, q, c, b, &lockedReporter{}, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 2)), Logger: slog.New(slog.DiscardHandler)})

	var keys []types.NamespacedName
	for i := range nodes {
		h.AddNode(node(fmt.Sprint("n", i), 64000))
	}
	for _, g := range gangs {
		h.AddPodGroup(podGroup(g, 2, 0))
	}
	for i := range pods {
		p := pod(fmt.Sprint("p", i), 100)
		if i < len(gangs)*members { // the first pods are the gangs' members
			g := gangs[i/members]
			p = memberPod(fmt.Sprint(g, "-", i%members), g, 100)
		}
		p.ResourceVersion = "1"
		p.Labels = map[string]string{versionLabel: "0"}
		key := framework.Key(p)
		keys = append(keys, key)
		srv.pods[key] = &serverPod{last: p}
		h.AddPod(p)
	}

	// stuck fails the test, with every goroutine's stack, if wg has not
	// ended by the deadline.
	stuck := func(what string, wg *sync.WaitGroup) {
		t.Helper()
		ended := make(chan struct{})
		go func() { wg.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-ctx.Done():
			_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
			t.Fatalf("%s: still running at the deadline", what)
		}
	}

	loopCtx, stopLoop := context.WithCancel(ctx)
	var loop, binder, producers sync.WaitGroup
	loop.Add(1)
	go func() { // the scheduling loop
		defer loop.Done()
		// Once the informers have stopped (loopCtx ended), a last run of
		// cycles while something is poppable at once: the newest version
		// of most lone pods is then one shown during their cycle.
		for tail := 200; tail > 0; {
			info, err := q.Pop(loopCtx)
			if err != nil {
				return
			}
			s.ScheduleOne(ctx, info) // loopCtx's end is no term's
			if loopCtx.Err() != nil {
				tail--
			}
		}
	}()
	binder.Add(1)
	go func() { defer binder.Done(); b.run() }()
	enough := func() bool {
		return ctx.Err() != nil || b.n.Load() >= bindings && b.members.Load() >= bindings/10 && b.aborted.Load() >= aborted && churn.rejected.Load() >= rejected
	}
	for g := range 2 { // the pod informer, two pods' events at a time
		producers.Add(1)
		go func() {
			defer producers.Done()
			for !enough() {
				for i := g; i < pods; i += 2 {
					srv.update(keys[i])
				}
			}
		}()
	}
	producers.Add(1)
	go func() { // the node informer: the node of an assumed pod goes, and comes back
		defer producers.Done()
		for i := 0; !enough(); i++ {
			name := fmt.Sprint("n", i%nodes)
			for j := range pods {
				if n, ok := c.NodeOf(keys[(i+j)%pods]); ok {
					name = n
					break
				}
			}
			h.DeleteNode(node(name, 64000))
			h.AddNode(node(name, 64000))
		}
	}()
	stuck("the informers", &producers)
	stopLoop()
	stuck("the scheduling loop", &loop)
	s.Wait()    // the PreBinds that hand bindings over have ended
	b.wg.Wait() // and so has every binding
	close(b.binds)
	stuck("the binder", &binder)

	t.Logf("%d bindings (%d of members, %d aborted), %d rejected at Reserve or Permit", b.n.Load(), b.members.Load(), b.aborted.Load(), churn.rejected.Load())
	if a := (&fixture{c: c}).assumedPods(); len(a) != 0 {
		t.Errorf("left assumed: %v", a)
	}
	for _, key := range keys {
		want := srv.newest(key)
		info, loc, ok := q.Get(key)
		switch {
		case !ok:
			t.Errorf("%v: lost (not queued), newest update %d", key, versionOf(want))
		case loc == schedq.InFlight:
			t.Errorf("%v: left in flight", key)
		case versionOf(info.Item) != versionOf(want):
			t.Errorf("%v: queued as update %d, the newest is %d", key, versionOf(info.Item), versionOf(want))
		}
	}
}
