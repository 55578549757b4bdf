package profile

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A pod that requests an extended resource a DeviceClass serves
// (DRAExtendedResource) has a ResourceClaim that is in none of its
// spec's claims: DynamicResources' Reserve puts the allocation of an
// in-memory claim (annotated as the pod's extended resources' claim,
// controlled by the pod, with a temporary UID) in flight, and its
// PreBind creates the claim in the API server, under a generated name
// and a UID of its own, then writes the allocation, then names the
// claim in pod.status.extendedResourceClaimStatus. A binding in doubt
// may have ended after the allocation was written. HoldClaims holds that
// allocation too, found through the DRA manager the plugins are given
// (draTap), which notes each such claim put in flight; the claim as the
// API server has it is the one annotated so and controlled by the pod
// (ExtendedClaimOf), whatever its name.

// extendedInFlight notes the extended resources' claims whose
// allocations are in flight, by their pod's UID. Its lock is a leaf.
type extendedInFlight struct {
	mu    sync.Mutex
	byPod map[types.UID]*resourceapi.ResourceClaim // the claim put in flight, under its UID
	pods  map[types.UID]types.UID                  // claim UID -> pod UID
}

// note notes claim, put in flight under uid, if it is a pod's extended
// resources' claim.
func (e *extendedInFlight) note(uid types.UID, claim *resourceapi.ResourceClaim) {
	pod := extendedClaimPod(claim)
	if pod == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byPod == nil {
		e.byPod, e.pods = map[types.UID]*resourceapi.ResourceClaim{}, map[types.UID]types.UID{}
	}
	if old, ok := e.byPod[pod]; ok && old.UID != uid {
		delete(e.pods, old.UID)
	}
	c := claim
	if c.UID != uid {
		c = c.DeepCopy()
		c.UID = uid
	}
	e.byPod[pod] = c
	e.pods[uid] = pod
}

// forget drops the note of the claim of uid, whose allocation is no
// longer in flight.
func (e *extendedInFlight) forget(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	pod, ok := e.pods[uid]
	if !ok {
		return
	}
	delete(e.pods, uid)
	if c := e.byPod[pod]; c != nil && c.UID == uid {
		delete(e.byPod, pod)
	}
}

// of returns the extended resources' claim of the pod of uid last put
// in flight; nil if none is noted.
func (e *extendedInFlight) of(pod types.UID) *resourceapi.ResourceClaim {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byPod[pod]
}

// extendedClaimPod returns the UID of the pod whose extended resources'
// claim c is (annotated so, and controlled by that pod); "" if it is
// none.
func extendedClaimPod(c *resourceapi.ResourceClaim) types.UID {
	if c == nil || c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
		return ""
	}
	for _, o := range c.OwnerReferences {
		if o.Kind == "Pod" && o.Controller != nil && *o.Controller {
			return o.UID
		}
	}
	return ""
}

// ExtendedClaimOf returns the claim among claims that is the extended
// resources' claim of the pod of uid, as DynamicResources finds it; nil
// if none is.
func ExtendedClaimOf(claims []resourceapi.ResourceClaim, pod types.UID) *resourceapi.ResourceClaim {
	for i := range claims {
		if extendedClaimPod(&claims[i]) == pod {
			return &claims[i]
		}
	}
	return nil
}

// extendedInFlightOf returns the extended resources' claim of pod whose
// allocation the DRA manager f's plugins are given holds in flight; nil
// if none.
func (f *Framework) extendedInFlightOf(pod *v1.Pod) *resourceapi.ResourceClaim {
	tap, ok := f.fwk.SharedDRAManager().(*draTap)
	if !ok || pod.UID == "" {
		return nil
	}
	return tap.ext.of(pod.UID)
}
