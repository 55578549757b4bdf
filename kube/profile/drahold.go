package profile

import (
	"cmp"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	fwk "k8s.io/kube-scheduler/framework"
)

// A binding in doubt (kube/scheduler/doubt.go) may have had its claims'
// allocations written by DynamicResources' PreBind while the plugin saw
// only its context's error; its Unreserve then drops those allocations
// in flight, and until the claims informer shows them, the allocator
// counts their devices free. HoldClaims keeps them in flight instead,
// one more share of each in the DRA manager's in-flight allocations,
// which every cycle's allocator counts, until SettleHeldClaim, given the
// claim as the API server has it, releases it.

// HeldClaim is a ResourceClaim whose allocation in flight a Framework
// holds for a binding in doubt.
type HeldClaim struct {
	Namespace, Name string
	UID             types.UID
	// Pod, if set, is the UID of the pod whose extended resources' claim
	// this is (drahold_ext.go): Name and UID are then the in-memory
	// claim's, and the claim as the API server has it is the one
	// ExtendedClaimOf finds among the namespace's.
	Pod types.UID
}

// claimHolds counts the shares of the allocations in flight held, by
// claim UID. Its lock is a leaf: nothing else is called under it.
type claimHolds struct {
	mu   sync.Mutex
	held map[types.UID]heldShares
}

type heldShares struct {
	claim  HeldClaim
	obj    *resourceapi.ResourceClaim // with the allocation held
	shares int
}

func (h *claimHolds) add(c HeldClaim, obj *resourceapi.ResourceClaim) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil {
		h.held = map[types.UID]heldShares{}
	}
	s := h.held[c.UID]
	s.claim = c
	if s.obj == nil {
		s.obj = obj
	}
	s.shares++
	h.held[c.UID] = s
}

// has reports whether uid is held.
func (h *claimHolds) has(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held[uid].shares > 0
}

// take forgets the holds of uid and returns them (no shares: none).
func (h *claimHolds) take(uid types.UID) heldShares {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.held[uid]
	delete(h.held, uid)
	return s
}

func (h *claimHolds) list() []HeldClaim {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]HeldClaim, 0, len(h.held))
	for _, s := range h.held {
		out = append(out, s.claim)
	}
	slices.SortFunc(out, func(a, b HeldClaim) int { return cmp.Compare(a.UID, b.UID) })
	return out
}

// HoldClaims holds, for pod (assumed on its node) whose binding ended in
// doubt, the allocation in flight of each of its claims that has one:
// one more share of it in the DRA manager, so that the Unreserve that
// follows leaves it there. Call it before that Unreserve. It returns how
// many claims it held. O(the pod's claims).
//
// Only the binding's own goroutine unreserves its claims, so a claim's
// allocation in flight found here is still there when the share is
// added; another pod sharing it (a group's member) could end its share
// in between only by writing the allocation (PreBind), which the assume
// cache then holds.
//
// The claim of the pod's extended resources, which is in none of its
// spec's claims (drahold_ext.go), is held too.
func (f *Framework) HoldClaims(pod *v1.Pod) int {
	tracker := f.fwk.SharedDRAManager().ResourceClaims()
	seen := map[types.UID]bool{}
	n := 0
	for i := range pod.Spec.ResourceClaims {
		c := claimOf(tracker, pod, &pod.Spec.ResourceClaims[i])
		if c == nil || seen[c.UID] {
			continue
		}
		seen[c.UID] = true
		if f.holdInFlight(tracker, c, HeldClaim{Namespace: c.Namespace, Name: c.Name, UID: c.UID}) {
			n++
		}
	}
	if c := f.extendedInFlightOf(pod); c != nil && !seen[c.UID] &&
		f.holdInFlight(tracker, c, HeldClaim{Namespace: pod.Namespace, Name: c.Name, UID: c.UID, Pod: pod.UID}) {
		n++
	}
	return n
}

// holdInFlight adds a share of c's allocation in flight, if it has one,
// held as h; it reports whether it did.
func (f *Framework) holdInFlight(tracker fwk.ResourceClaimTracker, c *resourceapi.ResourceClaim, h HeldClaim) bool {
	alloc := tracker.GetPendingAllocation(c.UID)
	if alloc == nil {
		return false
	}
	held := c.DeepCopy()
	held.Status.Allocation = alloc.DeepCopy()
	if tracker.SignalClaimPendingAllocation(c.UID, held) != nil {
		return false
	}
	f.holds.add(h, held)
	return true
}

// claimOf returns the claim pc of pod names, as the DRA manager has it;
// nil if it has none.
func claimOf(tracker fwk.ResourceClaimTracker, pod *v1.Pod, pc *v1.PodResourceClaim) *resourceapi.ResourceClaim {
	name, _, err := resourceclaim.Name(pod, pc)
	if err != nil || name == nil {
		return nil
	}
	c, err := tracker.Get(pod.Namespace, *name)
	if err != nil {
		return nil
	}
	return c
}

// HeldClaims lists the claims held (HoldClaims) and not settled yet, by
// UID.
func (f *Framework) HeldClaims() []HeldClaim { return f.holds.list() }

// SettleHeldClaim settles h given the claim as the API server has it now
// (nil: not found), read after the term that held it ended:
//   - allocated (the same claim): the claim as read is put in the DRA
//     manager's assume cache, which keeps it until the claims informer
//     shows a newer one, and then the shares held are released, so that
//     its devices stay counted throughout;
//   - not allocated, gone or replaced: the shares are released, and the
//     last one out puts the claim back as the informer has it, as
//     upstream's Unreserve does.
//
// A pod's extended resources' claim (h.Pod set) is settled given the
// claim the pod owns as the API server has it (ExtendedClaimOf; nil:
// none), whatever its UID; allocated, it stays held (still listed by
// HeldClaims, for a later read) until the claims informer has shown the
// claim, which PreBind created: only then can the claim as read be
// assumed and count its devices.
//
// If h was settled already, nothing is done. It reports whether h was
// held, and, if its devices are free again, the claim with the
// allocation that held them (freed): the pods DynamicResources rejected
// meanwhile wait for an event that says so, as the claim's deallocation
// would (nothing else tells them: the claim as the informer has it never
// had that allocation).
func (f *Framework) SettleHeldClaim(h HeldClaim, now *resourceapi.ResourceClaim) (held bool, freed *resourceapi.ResourceClaim) {
	tracker := f.fwk.SharedDRAManager().ResourceClaims()
	allocated := now != nil && now.Status.Allocation != nil && (now.UID == h.UID || (h.Pod != "" && extendedClaimPod(now) == h.Pod))
	if allocated && h.Pod != "" {
		if _, err := tracker.Get(now.Namespace, now.Name); err != nil {
			return f.holds.has(h.UID), nil // not in the informer yet: kept held
		}
	}
	s := f.holds.take(h.UID)
	shares := s.shares
	if shares == 0 {
		return false, nil
	}
	if allocated {
		// An error says the assume cache has a newer claim already.
		_ = tracker.AssumeClaimAfterAPICall(now)
	}
	released := false
	for range shares {
		released = tracker.MaybeRemoveClaimPendingAllocation(h.UID, false) || released
	}
	if !released || allocated {
		return true, nil
	}
	if h.Pod == "" {
		tracker.AssumedClaimRestore(h.Namespace, h.Name)
	} else {
		restoreExtendedClaims(tracker, h.Pod)
	}
	return true, s.obj
}

// restoreExtendedClaims puts back, as the informer has it, each claim
// the DRA manager has that is the extended resources' claim of the pod
// of uid: PreBind assumes the claim it created with the allocation it
// tried to write, written or not, and the Unreserve that a hold
// outlived left it so. O(claims).
func restoreExtendedClaims(tracker fwk.ResourceClaimTracker, pod types.UID) {
	claims, err := tracker.List()
	if err != nil {
		return
	}
	for _, c := range claims {
		if extendedClaimPod(c) == pod {
			tracker.AssumedClaimRestore(c.Namespace, c.Name)
		}
	}
}
