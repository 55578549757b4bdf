package profile

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// extendedClaim is the claim of pod-a's extended resources as
// DynamicResources builds it: annotated, controlled by the pod; name and
// UID are the in-memory claim's (inMemory) or the API server's.
func extendedClaim(name string, uid types.UID) *resourceapi.ResourceClaim {
	c := holdClaim(name)
	c.UID = uid
	c.Annotations = map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"}
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "a", UID: "pod-a", Controller: ptr.To(true)}}
	return c
}

// TestHoldClaimsHoldsTheExtendedResourcesClaim: the claim of a pod's
// extended resources, in none of its spec's claims, whose allocation is
// in flight under its in-memory UID, is held too (before, HoldClaims
// only looked at spec.resourceClaims, and the Unreserve that followed
// freed its device). It is settled by the claim the pod owns as the API
// server has it, whatever its name and UID: allocated but not in the
// DRA manager yet, it stays held; allocated and there, the device stays
// counted as that claim's; gone or not allocated, the device is free.
func TestHoldClaimsHoldsTheExtendedResourcesClaim(t *testing.T) {
	for _, tc := range []struct {
		name        string
		inManager   bool                       // the informer has shown the created claim
		now         *resourceapi.ResourceClaim // as read
		wantHeld    bool                       // still held after the settling
		wantCounted bool                       // the device, after the settling
	}{
		{name: "allocated, not in the informer", now: allocatedTo(extendedClaim("a-ext-1", "server"), "p", "gpu-0", "7"), wantHeld: true, wantCounted: true},
		{name: "allocated", inManager: true, now: allocatedTo(extendedClaim("a-ext-1", "server"), "p", "gpu-0", "7"), wantCounted: true},
		{name: "not allocated", inManager: true, now: extendedClaim("a-ext-1", "server")},
		{name: "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var claims []*resourceapi.ResourceClaim
			if tc.inManager {
				claims = append(claims, extendedClaim("a-ext-1", "server"))
			}
			f, tr := holdFramework(t, claims...)
			mem := extendedClaim("<extended-resources>", "in-memory")
			reserved(t, tr, mem, "gpu-0")
			if n := f.HoldClaims(pod("a", "n1")); n != 1 {
				t.Fatalf("HoldClaims held %d claims, want 1", n)
			}
			if tr.MaybeRemoveClaimPendingAllocation(mem.UID, false) { // the binding's Unreserve
				t.Fatal("Unreserve released the allocation held")
			}
			held := f.HeldClaims()
			if want := (HeldClaim{Namespace: "ns", Name: mem.Name, UID: mem.UID, Pod: "pod-a"}); len(held) != 1 || held[0] != want {
				t.Fatalf("HeldClaims = %+v, want %+v", held, want)
			}
			if ok, _ := f.SettleHeldClaim(held[0], tc.now); !ok {
				t.Fatal("SettleHeldClaim: not held")
			}
			if got := len(f.HeldClaims()) == 1; got != tc.wantHeld {
				t.Errorf("still held: %v, want %v", got, tc.wantHeld)
			}
			if got := deviceCounted(t, tr, "gpu-0"); got != tc.wantCounted {
				t.Errorf("device counted allocated: %v, want %v", got, tc.wantCounted)
			}
		})
	}
}

// TestExtendedClaimOf finds a pod's extended resources' claim by its
// annotation and controller, not by its name.
func TestExtendedClaimOf(t *testing.T) {
	notOurs := extendedClaim("b-ext", "b")
	notOurs.OwnerReferences[0].UID = "pod-b"
	plain := holdClaim("a-ext-0")
	plain.OwnerReferences = extendedClaim("x", "x").OwnerReferences
	list := []resourceapi.ResourceClaim{*notOurs, *plain, *extendedClaim("a-ext-1", "mine")}
	if got := ExtendedClaimOf(list, "pod-a"); got == nil || got.UID != "mine" {
		t.Errorf("ExtendedClaimOf = %+v, want a-ext-1", got)
	}
	if got := ExtendedClaimOf(list[:2], "pod-a"); got != nil {
		t.Errorf("ExtendedClaimOf = %s, want none", got.Name)
	}
}
