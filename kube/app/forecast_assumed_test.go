package app

import (
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// unallocatedClaims is a claim tracker whose claims are all unallocated,
// none in flight: the tracker as it is between the cache's Assume of a
// pod and DynamicResources' Reserve (or after a Reserve that failed).
type unallocatedClaims struct{ claims []*resourceapi.ResourceClaim }

func (u unallocatedClaims) List() ([]*resourceapi.ResourceClaim, error) { return u.claims, nil }

func (u unallocatedClaims) GetPendingAllocation(types.UID) *resourceapi.AllocationResult { return nil }

func (u unallocatedClaims) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	for _, c := range u.claims {
		if c.Namespace == namespace && c.Name == name {
			return c, nil
		}
	}
	return nil, nil
}

// TestLiveStateCopyOfAssumedPodWithoutAllocation: the cache has the pod
// assumed (the scheduler assumes before Reserve), and the tracker shows
// its claim unallocated, none in flight. The copy must not run the pod on
// its node with its device free: it is pending, in flight.
func TestLiveStateCopyOfAssumedPodWithoutAllocation(t *testing.T) {
	for _, tc := range []struct {
		name        string
		allocated   bool
		wantRunning int
	}{
		{name: "claim unallocated: pending", allocated: false, wantRunning: 0},
		{name: "claim allocated: running", allocated: true, wantRunning: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveCluster(t, 1)
			claim := draClaim("held", testDriver)
			if tc.allocated {
				claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
					Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: testDriver, Pool: "n0", Device: "gpu-0"}}}}
			}
			p := claimingPod("p", "held")
			p.Namespace = "default"
			l.pods.Add(p) // unbound in the informer; popped, so not queued
			pi, err := framework.NewPodInfo(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.cache.Assume(pi, "n0", nil); err != nil {
				t.Fatal(err)
			}
			ls := &liveState{queue: l.queue, cache: l.cache, pods: l.pods, namespaces: l.nss, groups: l.groups,
				objects: []cache.Store{l.objs}, claims: unallocatedClaims{[]*resourceapi.ResourceClaim{claim}},
				schedulerName: "schedq", clock: l.clk}
			st, _ := ls.copy()
			if len(st.Running) != tc.wantRunning || len(st.Running)+len(st.Pending) != 1 {
				t.Fatalf("%d running, %d pending; want %d running, the pod once", len(st.Running), len(st.Pending), tc.wantRunning)
			}
			if len(st.Pending) == 1 && (st.Pending[0].UID != p.UID || st.Pending[0].Spec.NodeName != "") {
				t.Errorf("pending %s on %q, want %s unbound", st.Pending[0].Name, st.Pending[0].Spec.NodeName, p.Name)
			}
		})
	}
}

// failingQueue is a queue view in which a pod's binding fails as the
// copy lists the queue, after it copied the cache: fail runs once.
type failingQueue struct {
	queueView
	once sync.Once
	fail func()
}

func (q *failingQueue) Pending(o schedq.PendingOptions[*v1.Pod]) schedq.PendingPage[types.NamespacedName] {
	q.once.Do(q.fail)
	return q.queueView.Pending(o)
}

// TestLiveStateCopyOfPodBeingBound: a pod whose binding is under way
// (assumed in the cache, unbound in the pod informer, in flight in the
// queue) is in the copy once, running on its node from now, as it will
// be unless the binding fails: never also pending, never lost. If its
// binding fails during the copy, after the cache was copied (it is
// forgotten and queued again), it is still in the copy once: running, as
// the cache was copied, not also pending from the queue's listing.
func TestLiveStateCopyOfPodBeingBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails bool
	}{
		{name: "binding under way"},
		{name: "binding fails during the copy", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveCluster(t, 1)
			p := l.pod("p", "1", "1h")
			l.pending(p)
			a, err := l.queue.Pop(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			pi, err := framework.NewPodInfo(a.Item)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.cache.Assume(pi, "n0", nil); err != nil {
				t.Fatal(err)
			}
			q := &failingQueue{queueView: l.queue, fail: func() {}}
			if tc.fails {
				q.fail = func() {
					l.cache.Forget(a.Item)
					if err := l.queue.Requeue(a, schedq.Failure{Message: "binding refused"}); err != nil {
						t.Error(err)
					}
				}
			}
			ls := &liveState{queue: q, cache: l.cache, pods: l.pods, namespaces: l.nss, groups: l.groups,
				objects: []cache.Store{l.objs}, schedulerName: "schedq", clock: l.clk}
			st, _ := ls.copy()
			if len(st.Running) != 1 || len(st.Pending) != 0 {
				t.Fatalf("%d running, %d pending; want p once, running", len(st.Running), len(st.Pending))
			}
			if r := st.Running[0]; r.Pod.UID != p.UID || r.Pod.Spec.NodeName != "n0" || !r.Started.Equal(st.Now) {
				t.Errorf("running %s on %q from %v, want p on n0 from now (%v)", r.Pod.Name, r.Pod.Spec.NodeName, r.Started, st.Now)
			}
			if err := checkCopy(st, map[types.UID]string{p.UID: "default/p"}, oursIn(l.pods)); err != nil {
				t.Error(err)
			}
		})
	}
}
