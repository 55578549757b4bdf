package app

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	resourcev1 "k8s.io/client-go/kubernetes/typed/resource/v1"
	k8stesting "k8s.io/client-go/testing"
)

// extendedGPU is the extended resource that extendedClass backs with
// testDriver's devices.
const extendedGPU = "example.com/gpu"

// extendedClass is draClass, which also serves extendedGPU: a pod that
// requests it gets a ResourceClaim that DynamicResources creates at
// PreBind (DRAExtendedResource).
func extendedClass() *resourceapi.DeviceClass {
	c := draClass()
	name := extendedGPU
	c.Spec.ExtendedResourceName = &name
	return c
}

// extendedPod is a pending pod of ours that requests one extendedGPU
// (n1 has none allocatable: DRA serves it), and no ResourceClaim.
func extendedPod(name string) *v1.Pod {
	p := uidPod(name)
	one := resource.MustParse("1")
	p.Spec.Containers[0].Resources.Requests[extendedGPU] = one
	p.Spec.Containers[0].Resources.Limits = v1.ResourceList{extendedGPU: one}
	return p
}

// TestNewTermHoldsTheDevicesOfAnExtendedClaimInDoubt is
// TestNewTermHoldsTheDevicesOfABindingInDoubt for a pod whose GPU is an
// extended resource: its claim is not in its spec but created by
// DynamicResources' PreBind, which then writes its allocation; the term
// ends during that write, and the claim's deletion by the Unreserve that
// follows fails (its context has ended). Before the fix the claim's
// allocation in flight was not held (HoldClaims only looked at the pod's
// spec.resourceClaims), so the new term, whose claims informer lags,
// counted the GPU free and gave it to b's claim too when the write had
// landed. Now it is held until a read of the claims the pod owns
// settles it, and the allocation is in the informer: no device is
// allocated to two claims, and b waits while the informer lags.
func TestNewTermHoldsTheDevicesOfAnExtendedClaimInDoubt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lands bool
		// wantB is b's node while the claims informer lags.
		wantB string
	}{
		{name: "landed", lands: true, wantB: ""},
		{name: "lost", lands: false, wantB: "n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testExtendedInDoubt(t, tc.lands, tc.wantB) })
		})
	}
}

func testExtendedInDoubt(t *testing.T, lands bool, wantB string) {
	f := newDRADoubtFixtureOf(t, func(h heldWrites) kubernetes.Interface { return endedClaimWrites{h} },
		extendedPod("a"), extendedClass())
	generateClaimNames(f)
	twice := watchDoubleAllocations(f)
	f.firstTermEndsDuringClaimWrite(t, lands)

	f.tm.rebuild(t.Context())
	end2, ended2 := f.term(t)
	time.Sleep(5 * time.Second)
	synctest.Wait()
	f.check(t, "while the claims informer lags", "", wantB)
	f.claims.release()
	time.Sleep(30 * time.Second)
	synctest.Wait()
	end2()
	<-ended2
	f.check(t, "at the end", "", "n1")
	if held := f.tm.opts.Profiles[0].HeldClaims(); len(held) != 0 {
		t.Errorf("claims still held at the end: %+v", held)
	}
	if d := twice.Load(); d != nil {
		t.Errorf("a device was allocated to two claims at once on the server: %s", *d)
	}
}

// watchDoubleAllocations records, at each claim status write that
// reaches f's fake server, whether it allocates a device that another
// claim there has allocated (what check sees only at its moments).
func watchDoubleAllocations(f *draDoubtFixture) *atomic.Pointer[string] {
	var twice atomic.Pointer[string]
	claims := resourceapi.SchemeGroupVersion.WithResource("resourceclaims")
	f.fc.PrependReactor("update", "resourceclaims", func(act k8stesting.Action) (bool, runtime.Object, error) {
		c := act.(k8stesting.UpdateAction).GetObject().(*resourceapi.ResourceClaim)
		if act.GetSubresource() != "status" || f.lost.Load() || c.Status.Allocation == nil {
			return false, nil, nil
		}
		list, err := f.fc.Tracker().List(claims, resourceapi.SchemeGroupVersion.WithKind("ResourceClaim"), c.Namespace)
		if err != nil {
			return false, nil, nil
		}
		for _, o := range list.(*resourceapi.ResourceClaimList).Items {
			if o.Name == c.Name || o.Status.Allocation == nil {
				continue
			}
			for _, r := range o.Status.Allocation.Devices.Results {
				for _, mine := range c.Status.Allocation.Devices.Results {
					if r.Pool == mine.Pool && r.Device == mine.Device {
						d := r.Pool + "/" + r.Device + " to " + o.Name + " and " + c.Name
						twice.CompareAndSwap(nil, &d)
					}
				}
			}
		}
		return false, nil, nil
	})
	return &twice
}

// generateClaimNames makes f's fake server name a created claim from its
// generateName and give it a UID, as the API server does.
func generateClaimNames(f *draDoubtFixture) {
	var n atomic.Int64
	f.fc.PrependReactor("create", "resourceclaims", func(act k8stesting.Action) (bool, runtime.Object, error) {
		c := act.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceClaim).DeepCopy()
		if c.Name != "" || c.GenerateName == "" {
			return false, nil, nil
		}
		i := strconv.FormatInt(n.Add(1), 10)
		c.Name, c.UID, c.ResourceVersion = c.GenerateName+i, types.UID("generated-"+i), "1"
		if err := f.fc.Tracker().Create(resourceapi.SchemeGroupVersion.WithResource("resourceclaims"), c, c.Namespace); err != nil {
			return true, nil, err
		}
		return true, c, nil
	})
}

// endedClaimWrites is a clientset whose claim creations, updates and
// deletions fail with their context's error, without reaching the
// server, once that context has ended, as a real client's do; status
// updates are heldWrites'.
type endedClaimWrites struct{ heldWrites }

func (c endedClaimWrites) ResourceV1() resourcev1.ResourceV1Interface {
	return endedResourceV1{c.heldWrites.ResourceV1()}
}

type endedResourceV1 struct{ resourcev1.ResourceV1Interface }

func (r endedResourceV1) ResourceClaims(ns string) resourcev1.ResourceClaimInterface {
	return endedClaims{r.ResourceV1Interface.ResourceClaims(ns)}
}

type endedClaims struct {
	resourcev1.ResourceClaimInterface
}

func (c endedClaims) Create(ctx context.Context, claim *resourceapi.ResourceClaim, o metav1.CreateOptions) (*resourceapi.ResourceClaim, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return c.ResourceClaimInterface.Create(ctx, claim, o)
}

func (c endedClaims) Update(ctx context.Context, claim *resourceapi.ResourceClaim, o metav1.UpdateOptions) (*resourceapi.ResourceClaim, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return c.ResourceClaimInterface.Update(ctx, claim, o)
}

func (c endedClaims) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return c.ResourceClaimInterface.Delete(ctx, name, o)
}
