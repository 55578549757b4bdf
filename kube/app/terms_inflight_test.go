package app

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

// podWatchGate delays a fake clientset's watch events of one resource
// (pods, for newPodWatchGate): while held, the events the server sends
// wait, in order, until it is released, and the informer shows the
// objects as they were before (an informer that lags, or a watch broken
// by an outage and not listed again yet).
type podWatchGate struct {
	mu   sync.Mutex
	open chan struct{} // closed while events flow
}

func newPodWatchGate(client *fake.Clientset) *podWatchGate { return newWatchGate(client, "pods") }

// newWatchGate gates the watches of resource.
func newWatchGate(client *fake.Clientset, resource string) *podWatchGate {
	g := &podWatchGate{open: make(chan struct{})}
	close(g.open)
	// The reactor runs under the fake's lock: it only starts the watch
	// and the goroutine that forwards it, which is what may wait.
	client.PrependWatchReactor(resource, func(a k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		inner, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		out := make(chan watch.Event)
		w := watch.NewProxyWatcher(out)
		go g.forward(inner, out, w.StopChan())
		return true, w, nil
	})
	return g
}

func (g *podWatchGate) forward(inner watch.Interface, out chan<- watch.Event, stop <-chan struct{}) {
	defer inner.Stop()
	for {
		var ev watch.Event
		select {
		case e, ok := <-inner.ResultChan():
			if !ok {
				close(out)
				return
			}
			ev = e
		case <-stop:
			return
		}
		select {
		case <-g.opened():
		case <-stop:
			return
		}
		select {
		case out <- ev:
		case <-stop:
			return
		}
	}
}

func (g *podWatchGate) opened() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// hold keeps the events sent from now on until release.
func (g *podWatchGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = make(chan struct{})
}

func (g *podWatchGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
}

// TestNewTermCountsABindingInDoubt: a term ends (its context is
// cancelled) while pod a's binding to n1, a node with room for one pod, is
// in flight; the request reaches the API server or not, but either way
// the term sees only its context's error. The pod informer lags: it does
// not show a bound. The same process then starts a new term, with b, a
// more urgent pod of the same size, pending. b must not be bound to n1
// while a may be there: before the fix the ended term forgot a, the new
// term counted n1 empty and bound b beside a (over-committed). Once the
// new term has read a from the API server and found it unbound, b is
// bound there.
func TestNewTermCountsABindingInDoubt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lands  bool   // a's binding reaches the API server
		wantA  string // a's node at the end
		wantB  string // b's node at the end
		whileB string // b's node while the informer has not shown a bound
	}{
		{name: "landed", lands: true, wantA: "n1", wantB: "", whileB: ""},
		{name: "lost", lands: false, wantA: "", wantB: "n1", whileB: "n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testBindingInDoubt(t, tc.lands, tc.whileB, tc.wantA, tc.wantB) })
		})
	}
}

// doubtFixture is a scheduler whose pod informer can be held back
// (gate), on a fake cluster (fc) with n1, a node with room for one pod,
// and a, a pending pod of low priority; client is what its terms use.
type doubtFixture struct {
	fc     *fake.Clientset
	gate   *podWatchGate
	tm     *terms
	lost   atomic.Bool // bindings are refused before they reach the server
	enter  chan struct{}
	freeIt chan struct{}
}

// newDoubtFixture builds it; wrap, if not nil, wraps the terms' client.
func newDoubtFixture(t *testing.T, wrap func(heldWrites) kubernetes.Interface) *doubtFixture {
	low := int32(0)
	a := testPod("a", "schedq", "1")
	a.Spec.Priority = &low
	f := &doubtFixture{fc: fakeCluster(testNode("n1", "1"), a), enter: make(chan struct{}), freeIt: make(chan struct{})}
	f.gate = newPodWatchGate(f.fc)
	f.fc.PrependReactor("create", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if act.GetSubresource() != "binding" || !f.lost.Load() {
			return false, nil, nil
		}
		return true, nil, apierrors.NewServiceUnavailable("connection reset")
	})
	var first sync.Once
	held := heldWrites{f.fc, func(resource, subresource string) {
		if resource == "pods" && subresource == "binding" {
			first.Do(func() {
				close(f.enter)
				<-f.freeIt // in flight whatever the context says
			})
		}
	}}
	var client kubernetes.Interface = held
	if wrap != nil {
		client = wrap(held)
	}

	f.tm = testTerms(t, f.fc, client, quietReporter{})
	return f
}

// term starts a term of f's scheduler.
func (f *doubtFixture) term(t *testing.T) (end context.CancelFunc, ended <-chan struct{}) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		f.tm.run(ctx)
		close(done)
	}()
	return cancel, done
}

// firstTermEndsInDoubt runs a first term, whose binding of a to n1 is in
// flight when the term ends; b, of high priority, arrives meanwhile and
// finds no room. From then on the informer shows no pod change. a's
// request reaches the server if lands. It returns a's node then.
func (f *doubtFixture) firstTermEndsInDoubt(t *testing.T, lands bool) string {
	high := int32(100)
	end1, ended1 := f.term(t)
	<-f.enter
	b := testPod("b", "schedq", "1")
	b.Spec.Priority = &high
	if _, err := f.fc.CoreV1().Pods("default").Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if n := podNode(t, f.fc, "b"); n != "" {
		t.Fatalf("b bound to %s beside a's binding in flight", n)
	}
	f.gate.hold()
	f.lost.Store(!lands)
	end1()
	synctest.Wait() // the loop has stopped; the term waits for the binding
	close(f.freeIt)
	<-ended1
	f.lost.Store(false)
	landed := podNode(t, f.fc, "a")
	if (landed == "n1") != lands {
		t.Fatalf("a on %q after term 1, want landed=%v", landed, lands)
	}
	return landed
}

func testBindingInDoubt(t *testing.T, lands bool, whileB, wantA, wantB string) {
	f := newDoubtFixture(t, nil)
	fc, tm := f.fc, f.tm
	landed := f.firstTermEndsInDoubt(t, lands)

	// Term 2, in the same process: the informer still shows a pending.
	tm.rebuild(t.Context())
	end2, ended2 := f.term(t)
	time.Sleep(5 * time.Second)
	synctest.Wait()
	if n := podNode(t, fc, "b"); n != whileB {
		t.Errorf("while the informer had not seen a bound: b on %q, want %q (a on %q, n1 has room for one)", n, whileB, landed)
	}
	f.gate.release()
	time.Sleep(5 * time.Second)
	synctest.Wait()
	end2()
	<-ended2
	gotA, gotB := podNode(t, fc, "a"), podNode(t, fc, "b")
	if gotA != wantA || gotB != wantB {
		t.Errorf("at the end: a on %q, b on %q; want %q, %q", gotA, gotB, wantA, wantB)
	}
	if gotA != "" && gotA == gotB {
		t.Errorf("a and b both bound to %s, which has room for one", gotA)
	}
}

// TestSlowReadsHoldTheNewTermBackOnlySoLong: the reads that settle the
// bindings in doubt before a new term's first pop share one deadline
// (settleFirstRound, 5 s): against an API server that answers no read, the
// new term places b on n2, a node that came meanwhile, after 5 s, not
// after a read's 10 s timeout per pod in doubt (as before). a stays in
// doubt, its room on n1 kept.
func TestSlowReadsHoldTheNewTermBackOnlySoLong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hang atomic.Bool
		f := newDoubtFixture(t, func(h heldWrites) kubernetes.Interface { return hangingGets{h, &hang} })
		f.firstTermEndsInDoubt(t, true)
		hang.Store(true)
		if _, err := f.fc.CoreV1().Nodes().Create(context.Background(), testNode("n2", "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		f.tm.rebuild(t.Context())
		start := time.Now()
		end2, ended2 := f.term(t)
		for podNode(t, f.fc, "b") == "" && time.Since(start) < time.Minute {
			time.Sleep(100 * time.Millisecond)
		}
		if took, n := time.Since(start), podNode(t, f.fc, "b"); n != "n2" || took > settleFirstRound+time.Second {
			t.Errorf("b bound to %q %v after the new term began, want n2 within %v", n, took, settleFirstRound+time.Second)
		}
		end2()
		<-ended2
	})
}

// hangingGets is a clientset whose pod reads wait for their context's end
// while hang is set: an API server that answers no read.
type hangingGets struct {
	heldWrites
	hang *atomic.Bool
}

func (c hangingGets) CoreV1() corev1.CoreV1Interface {
	return hangingCore{c.heldWrites.CoreV1(), c.hang}
}

type hangingCore struct {
	corev1.CoreV1Interface
	hang *atomic.Bool
}

func (c hangingCore) Pods(ns string) corev1.PodInterface {
	return hangingPods{c.CoreV1Interface.Pods(ns), c.hang}
}

type hangingPods struct {
	corev1.PodInterface
	hang *atomic.Bool
}

func (p hangingPods) Get(ctx context.Context, name string, o metav1.GetOptions) (*v1.Pod, error) {
	if p.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return p.PodInterface.Get(ctx, name, o)
}

// testTerms is a terms of schedq's default profile on a fake cluster:
// its informers (on watched, synced before it returns), its cache and
// switch queue, client for its reads and writes and reporter for its
// failures. The terms are run with run.
func testTerms(t *testing.T, watched *fake.Clientset, client kubernetes.Interface, reporter scheduler.Reporter) *terms {
	t.Helper()
	cfg, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	fw, qcfg, q := frameworkAndQueue(t, &cfg.Profiles[0], nil)
	queues := &switchQueue{}
	queues.replace(t.Context(), q, func(*podQueue) {})
	t.Cleanup(queues.close)
	c := scheduler.NewCache()
	h := &scheduler.Handlers{Queue: queues, Cache: c, SchedulerName: "schedq", Hints: qcfg.Hints}
	factory := informers.NewSharedInformerFactory(watched, 0)
	pods := factory.Core().V1().Pods().Informer()
	synced, err := h.Register(pods, factory.Core().V1().Nodes().Informer(), factory.Core().V1().Namespaces().Informer(), nil)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(t.Context().Done())
	factory.WaitForCacheSync(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), synced) {
		t.Fatal("handlers not synced")
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &terms{
		queues: queues, cache: c, handlers: h, pods: pods, qcfg: qcfg, client: client,
		backoff: newOutageBackoff(clock.RealClock{}), state: &state{}, log: log, reporter: reporter,
		opts: scheduler.Options{Profiles: []*profile.Framework{fw}, Logger: log},
	}
}
