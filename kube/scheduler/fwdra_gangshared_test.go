package scheduler

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/profile"
)

// claimServer is a fake clientset that answers ResourceClaim updates as
// the API server does: an update whose resourceVersion is not the stored
// one is a conflict, the status subresource changes only the status and
// the main resource all but the status, and each write bumps the
// resourceVersion.
func claimServer(t *testing.T, claims ...*resourceapi.ResourceClaim) *fake.Clientset {
	t.Helper()
	var objs []runtime.Object
	for _, c := range claims {
		objs = append(objs, c.DeepCopy())
	}
	cs := fake.NewSimpleClientset(objs...)
	gvr := resourceapi.SchemeGroupVersion.WithResource("resourceclaims")
	cs.PrependReactor("update", "resourceclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
		u := a.(clienttesting.UpdateAction)
		in := u.GetObject().(*resourceapi.ResourceClaim).DeepCopy()
		stored, err := cs.Tracker().Get(gvr, u.GetNamespace(), in.Name)
		if err != nil {
			return true, nil, err
		}
		cur := stored.(*resourceapi.ResourceClaim)
		if in.ResourceVersion != cur.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), in.Name, errors.New("the object has been modified"))
		}
		out := cur.DeepCopy()
		if u.GetSubresource() == "status" {
			out.Status = in.Status
		} else {
			in.Status = out.Status
			out = in
		}
		rv, _ := strconv.Atoi(cur.ResourceVersion)
		out.ResourceVersion = strconv.Itoa(rv + 1)
		if err := cs.Tracker().Update(gvr, out, u.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, out.DeepCopy(), nil
	})
	return cs
}

// lockedBinder binds at once, from any goroutine.
type lockedBinder struct {
	mu    sync.Mutex
	binds map[string]string
}

func (b *lockedBinder) Bind(_ context.Context, p *v1.Pod, node string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	b.mu.Lock()
	b.binds[p.Name] = node
	b.mu.Unlock()
	done(nil)
}

// failureLog is a Reporter that records the failures reported, from
// any goroutine.
type failureLog struct {
	mu       sync.Mutex
	failures []string
}

func (r *failureLog) Unschedulable(_ context.Context, p *v1.Pod, reason, msg string, _ func() FailureRecord) {
	r.mu.Lock()
	r.failures = append(r.failures, p.Name+": "+reason+": "+msg)
	r.mu.Unlock()
}
func (r *failureLog) Scheduled(context.Context, *v1.Pod, string)           {}
func (r *failureLog) Warn(context.Context, runtime.Object, string, string) {}

// gpuClass, gpuSlice and gpuClaim are DRA's objects for one GPU on node.
func gpuClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com", UID: "class-gpu", ResourceVersion: "1"}}
}

func gpuSlice(node string) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus", UID: types.UID("slice-" + node), ResourceVersion: "1"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: &node,
			Pool:    resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "gpu-0"}}},
	}
}

// gpuClaim is claim "shared" of one GPU, allocated on node's if node is
// not empty.
func gpuClaim(node string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared", UID: "claim-shared", ResourceVersion: "1"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
	if node != "" {
		c.Finalizers = []string{resourceapi.Finalizer}
		c.Status.Allocation = &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "gpu", Driver: "gpu.example.com", Pool: node, Device: "gpu-0"}}},
			NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}},
		}
	}
	return c
}

// TestFrameworkGangSharesUnallocatedClaim: the members of a gang all use
// claim "shared", and node n1 has its one GPU. If no one has allocated the
// claim, the first member's Reserve allocates it in the group's trial and
// the others reuse that allocation; every member binds, and the claim
// ends allocated once and reserved for each, whether the members'
// PreBinds run on goroutines of their own or on the cycle's. A gang that
// cannot meet its quorum (n1 has room for two members of 3000m) leaves
// the claim unallocated and nothing in flight. A claim allocated already
// is reserved for each member as before.
func TestFrameworkGangSharesUnallocatedClaim(t *testing.T) {
	for _, tc := range []struct {
		name      string
		allocated bool // the claim is allocated on n1 before
		n         int
		minCount  int32
		milliCPU  int64
		syncBind  bool
		wantBound []string
	}{
		{name: "two members, PreBinds on goroutines", n: 2, minCount: 2, milliCPU: 100, wantBound: []string{"g-0", "g-1"}},
		{name: "four members, PreBinds on goroutines", n: 4, minCount: 4, milliCPU: 100, wantBound: []string{"g-0", "g-1", "g-2", "g-3"}},
		{name: "three members, PreBinds on the cycle", n: 3, minCount: 3, milliCPU: 100, syncBind: true, wantBound: []string{"g-0", "g-1", "g-2"}},
		{name: "quorum lost", n: 3, minCount: 3, milliCPU: 3000},
		{name: "claim allocated before", allocated: true, n: 2, minCount: 2, milliCPU: 100, wantBound: []string{"g-0", "g-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := gpuClaim("")
			if tc.allocated {
				claim = gpuClaim("n1")
			}
			g := newDRAGang(t, claim, tc.syncBind)
			name := "shared"
			g.f.addFWGang("g", tc.minCount, tc.n, func(_ int, p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = *resource.NewMilliQuantity(tc.milliCPU, resource.DecimalSI)
				p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
				p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
			})
			out := g.f.once()
			g.f.s.Wait()
			if bound := g.bound(); !slices.Equal(bound, tc.wantBound) {
				t.Fatalf("outcome %+v; bound %v, want %v; reported %q", out, bound, tc.wantBound, g.r.failures)
			}
			if len(g.r.failures) != 0 && len(tc.wantBound) > 0 {
				t.Errorf("reported %q, want no failure", g.r.failures)
			}
			a, reserved, uid := g.claim()
			switch {
			case len(tc.wantBound) == 0:
				if a != nil || len(reserved) != 0 {
					t.Errorf("claim: allocation %v, reserved for %v; want neither", a, reserved)
				}
				if p := g.fw.Framework().SharedDRAManager().ResourceClaims().GetPendingAllocation(uid); p != nil {
					t.Errorf("an allocation is still in flight: %v", p)
				}
			case a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Pool != "n1" || !slices.Equal(reserved, tc.wantBound):
				t.Errorf("claim: allocation %v, reserved for %v; want allocated on n1, reserved for %v", a, reserved, tc.wantBound)
			}
		})
	}
}

// draGang is a scheduler on kube-scheduler's default profile over a
// claimServer, with node n1 and its GPU.
type draGang struct {
	f      *fixture
	fw     *profile.Framework
	client *fake.Clientset
	b      *lockedBinder
	r      *failureLog
}

// newDRAGang builds a draGang whose claim server and framework hold
// claim; syncBind runs PreBind on the cycle's goroutine.
func newDRAGang(t *testing.T, claim *resourceapi.ResourceClaim, syncBind bool) *draGang {
	t.Helper()
	return newDRAGangOn(t, gpuSlice("n1"), []*resourceapi.ResourceClaim{claim}, syncBind, nil)
}

// newDRAGangOn builds a draGang whose node n1 has slice's devices, whose
// claim server and framework hold claims, and whose framework's DRA
// manager is wrapped by wrap if it is not nil.
func newDRAGangOn(t *testing.T, slice *resourceapi.ResourceSlice, claims []*resourceapi.ResourceClaim, syncBind bool, wrap func(fwk.SharedDRAManager) profile.DRAWrap) *draGang {
	t.Helper()
	g := &draGang{client: claimServer(t, claims...), b: &lockedBinder{binds: map[string]string{}}, r: &failureLog{}}
	objs := []runtime.Object{gpuClass(), slice}
	for _, c := range claims {
		objs = append(objs, c)
	}
	fw, err := profile.NewFrameworkOn(context.Background(), defaultProfile(t), profile.Setup{
		Snapshot: backendcache.NewEmptySnapshot(), Client: g.client, Objects: objs, WrapDRA: wrap,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fw.Close() })
	g.fw = fw
	q := queueOn(t, fw)
	c := NewCache()
	g.f = &fixture{t: t, q: q, c: c, h: &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}}
	g.f.s = mustNew(t, q, c, g.b, g.r, Options{Profiles: []*profile.Framework{fw}, SyncPreBind: syncBind, Rand: rand.New(rand.NewPCG(1, 1))})
	g.f.h.AddNode(zonedNode("n1", "a"))
	return g
}

// bound lists the pods bound, sorted.
func (g *draGang) bound() []string {
	g.b.mu.Lock()
	defer g.b.mu.Unlock()
	var bound []string
	for p := range g.b.binds {
		bound = append(bound, p)
	}
	slices.Sort(bound)
	return bound
}

// claim returns claim "shared" as the server holds it: its allocation,
// the names of the pods it is reserved for (sorted), and its UID.
func (g *draGang) claim() (*resourceapi.AllocationResult, []string, types.UID) {
	g.f.t.Helper()
	got, err := g.client.ResourceV1().ResourceClaims("default").Get(context.Background(), "shared", metav1.GetOptions{})
	if err != nil {
		g.f.t.Fatal(err)
	}
	var reserved []string
	for _, ref := range got.Status.ReservedFor {
		reserved = append(reserved, ref.Name)
	}
	slices.Sort(reserved)
	return got.Status.Allocation, reserved, got.UID
}

// defaultProfile is kube-scheduler's default profile.
func defaultProfile(t *testing.T) *config.KubeSchedulerProfile {
	t.Helper()
	cfg, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	return &cfg.Profiles[0]
}
