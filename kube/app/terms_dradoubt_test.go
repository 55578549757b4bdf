package app

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	resourcev1 "k8s.io/client-go/kubernetes/typed/resource/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

// TestNewTermHoldsTheDevicesOfABindingInDoubt: a term ends while
// DynamicResources' PreBind writes the allocation of a's claim (n1's one
// GPU) to the API server; the write is made or not (lands), but either
// way PreBind sees its context's error, and the binding ends in doubt.
// The claims informer lags (it shows no allocation). The same process
// starts a new term, with b, a more urgent pod whose claim asks for a
// GPU too, pending. Before the fix the ended term's Unreserve dropped
// a's allocation in flight, the new term counted the GPU free and
// allocated it to b's claim as well (the API server does not check that
// a device is allocated once): two claims on one device. Now a's
// allocation is held until a read of its claim settles it: allocated,
// a is bound to n1 with it and b waits; not allocated, b gets the GPU.
func TestNewTermHoldsTheDevicesOfABindingInDoubt(t *testing.T) {
	for _, tc := range []struct {
		name         string
		lands        bool   // a's claim status write reaches the API server
		wantA, wantB string // the pods' nodes, while the claims informer lags and at the end
	}{
		{name: "landed", lands: true, wantA: "n1", wantB: ""},
		{name: "lost", lands: false, wantA: "", wantB: "n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testDevicesInDoubt(t, tc.lands, tc.wantA, tc.wantB) })
		})
	}
}

func testDevicesInDoubt(t *testing.T, lands bool, wantA, wantB string) {
	f := newDRADoubtFixture(t, nil)
	f.firstTermEndsDuringClaimWrite(t, lands)

	f.tm.rebuild(t.Context())
	end2, ended2 := f.term(t)
	time.Sleep(5 * time.Second)
	synctest.Wait()
	f.check(t, "while the claims informer lags", wantA, wantB)
	f.claims.release()
	time.Sleep(5 * time.Second)
	synctest.Wait()
	end2()
	<-ended2
	f.check(t, "at the end", wantA, wantB)
}

// draDoubtFixture is a scheduler with kube-scheduler's DynamicResources
// on a fake cluster (fc) with n1, a node with one GPU (a ResourceSlice of
// one device), the claims ca and cb, each asking for one GPU, and a, a
// pending pod of low priority that uses ca. Its claims informer can be
// held back (claims); each claim update gets a new resourceVersion, as
// the API server gives (the fake keeps the client's, and the DRA
// manager's assume cache ignores an update that does not raise it).
type draDoubtFixture struct {
	fc     *fake.Clientset
	claims *podWatchGate
	tm     *terms
	lost   atomic.Bool // claim status writes are refused before they reach the server
	enter  chan struct{}
	freeIt chan struct{}
}

// newDRADoubtFixture builds it; wrap, if not nil, wraps the client of
// its terms and plugins.
func newDRADoubtFixture(t *testing.T, wrap func(heldWrites) kubernetes.Interface) *draDoubtFixture {
	return newDRADoubtFixtureOf(t, wrap, claimingPod("a", "ca"), draClass())
}

// newDRADoubtFixtureOf builds it with a (given priority 0) for pod a and
// class for the DeviceClass.
func newDRADoubtFixtureOf(t *testing.T, wrap func(heldWrites) kubernetes.Interface, a *v1.Pod, class *resourceapi.DeviceClass) *draDoubtFixture {
	low := int32(0)
	a.Spec.Priority = &low
	f := &draDoubtFixture{
		fc: fakeCluster(testNode("n1", "2"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
			class, draSlice("n1"), draClaim("ca", testDriver), draClaim("cb", testDriver), a),
		enter: make(chan struct{}), freeIt: make(chan struct{}),
	}
	f.claims = newWatchGate(f.fc, "resourceclaims")
	var rv atomic.Int64
	rv.Store(100)
	f.fc.PrependReactor("update", "resourceclaims", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if act.GetSubresource() == "status" && f.lost.Load() {
			return true, nil, apierrors.NewServiceUnavailable("connection reset")
		}
		c := act.(k8stesting.UpdateAction).GetObject().(*resourceapi.ResourceClaim).DeepCopy()
		c.ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
		if err := f.fc.Tracker().Update(resourceapi.SchemeGroupVersion.WithResource("resourceclaims"), c, c.Namespace); err != nil {
			return true, nil, err
		}
		return true, c, nil
	})
	var first sync.Once
	held := heldWrites{f.fc, func(resource, subresource string) {
		if resource == "resourceclaims" && subresource == "status" {
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

	o := upstreamOptions(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	factory := informers.NewSharedInformerFactory(f.fc, 0)
	qcfg := scheduler.QueueConfig()
	fws, err := upstreamFrameworks(t.Context(), o, &qcfg, client, factory, nil, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(fws) })
	fw := fws[0]
	q, err := schedq.New(qcfg)
	if err != nil {
		t.Fatal(err)
	}
	queues := &switchQueue{}
	queues.replace(t.Context(), q, func(*podQueue) {})
	t.Cleanup(queues.close)
	c := scheduler.NewCache()
	h := &scheduler.Handlers{Queue: queues, Cache: c, SchedulerName: "schedq", Hints: qcfg.Hints, Logger: log}
	pods := factory.Core().V1().Pods().Informer()
	synced, err := h.Register(pods, factory.Core().V1().Nodes().Informer(), factory.Core().V1().Namespaces().Informer(),
		eventSources(watched(factory, qcfg.Hints), fw.EventSources()))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(t.Context().Done())
	factory.WaitForCacheSync(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), synced) {
		t.Fatal("handlers not synced")
	}
	f.tm = &terms{
		queues: queues, cache: c, handlers: h, pods: pods, qcfg: qcfg, client: client,
		backoff: newOutageBackoff(clock.RealClock{}), state: &state{}, log: log, reporter: quietReporter{},
		opts: scheduler.Options{Profiles: []*profile.Framework{fw}, Logger: log},
	}
	return f
}

// term starts a term of f's scheduler.
func (f *draDoubtFixture) term(t *testing.T) (end context.CancelFunc, ended <-chan struct{}) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		f.tm.run(ctx)
		close(done)
	}()
	return cancel, done
}

// firstTermEndsDuringClaimWrite runs a first term, whose PreBind of a is
// writing its claim's allocation when the term ends; b, of high priority, whose
// claim cb asks for a GPU too, arrives meanwhile and finds none. From
// then on the claims informer shows no change. The write reaches the
// server if lands.
func (f *draDoubtFixture) firstTermEndsDuringClaimWrite(t *testing.T, lands bool) {
	high := int32(100)
	end1, ended1 := f.term(t)
	<-f.enter
	b := claimingPod("b", "cb")
	b.Spec.Priority = &high
	if _, err := f.fc.CoreV1().Pods("default").Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if n := podNode(t, f.fc, "b"); n != "" {
		t.Fatalf("b bound to %s while a's allocation of its one GPU is in flight", n)
	}
	f.claims.hold()
	f.lost.Store(!lands)
	end1()
	synctest.Wait() // the loop has stopped; the term waits for the binding
	close(f.freeIt)
	<-ended1
	f.lost.Store(false)
	got := 0
	for _, devs := range f.allocations(t) {
		got += len(devs)
	}
	if (got == 1) != lands {
		t.Fatalf("a's claim has %d devices allocated after term 1, want landed=%v", got, lands)
	}
	if n := podNode(t, f.fc, "a"); n != "" {
		t.Fatalf("a bound to %s: its PreBind failed", n)
	}
}

// allocations returns the devices allocated to each claim, as the API
// server has them.
func (f *draDoubtFixture) allocations(t *testing.T) map[string][]string {
	t.Helper()
	list, err := f.fc.ResourceV1().ResourceClaims("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, c := range list.Items {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			out[c.Name] = append(out[c.Name], r.Pool+"/"+r.Device)
		}
	}
	return out
}

// check fails t unless a and b are on wantA and wantB, and no device is
// allocated to two claims.
func (f *draDoubtFixture) check(t *testing.T, when, wantA, wantB string) {
	t.Helper()
	owners := map[string][]string{}
	for claim, devs := range f.allocations(t) {
		for _, d := range devs {
			owners[d] = append(owners[d], claim)
		}
	}
	for d, claims := range owners {
		if len(claims) > 1 {
			t.Errorf("%s: device %s allocated to %d claims %v", when, d, len(claims), claims)
		}
	}
	if a, b := podNode(t, f.fc, "a"), podNode(t, f.fc, "b"); a != wantA || b != wantB {
		t.Errorf("%s: a on %q, b on %q; want %q, %q", when, a, b, wantA, wantB)
	}
}

// TestHeldDevicesFreedWakeTheParkedPods: when a's claim, held for its
// binding in doubt, cannot be read at the new term's start, a and b are
// tried meanwhile and parked: its GPU is held. Once a read finds ca not
// allocated (its write was lost), the device is freed, and an event of
// ca's deallocation wakes them: b is bound within seconds, not at the
// queue's 5-minute flush of parked pods (before, nothing woke them: the
// claim as the informer has it never changed).
func TestHeldDevicesFreedWakeTheParkedPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fail atomic.Bool
		f := newDRADoubtFixture(t, func(h heldWrites) kubernetes.Interface { return failingClaimReads{h, &fail} })
		f.firstTermEndsDuringClaimWrite(t, false)
		fail.Store(true)
		f.tm.rebuild(t.Context())
		end2, ended2 := f.term(t)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		f.check(t, "while ca cannot be read", "", "")
		fail.Store(false)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		f.check(t, "once ca was read", "", "n1")
		end2()
		<-ended2
	})
}

// failingClaimReads is a clientset whose ResourceClaim reads fail (a 503)
// while fail is set.
type failingClaimReads struct {
	heldWrites
	fail *atomic.Bool
}

func (c failingClaimReads) ResourceV1() resourcev1.ResourceV1Interface {
	return failingResourceV1{c.heldWrites.ResourceV1(), c.fail}
}

type failingResourceV1 struct {
	resourcev1.ResourceV1Interface
	fail *atomic.Bool
}

func (r failingResourceV1) ResourceClaims(ns string) resourcev1.ResourceClaimInterface {
	return failingClaims{r.ResourceV1Interface.ResourceClaims(ns), r.fail}
}

type failingClaims struct {
	resourcev1.ResourceClaimInterface
	fail *atomic.Bool
}

func (c failingClaims) Get(ctx context.Context, name string, o metav1.GetOptions) (*resourceapi.ResourceClaim, error) {
	if c.fail.Load() {
		return nil, apierrors.NewServiceUnavailable("unavailable")
	}
	return c.ResourceClaimInterface.Get(ctx, name, o)
}
