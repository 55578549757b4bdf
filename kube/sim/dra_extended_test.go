package sim

import (
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestDRAExtendedResourceClaims: a pod that asks for an extended resource
// that a DeviceClass maps to DRA devices (extendedResourceName, GA in
// v1.37), on a node that has no such allocatable, gets its devices as the
// live scheduler gets them: DynamicResources' PreBind creates a claim for
// it (a generated name), allocates and reserves it, and names it in the
// pod's status.extendedResourceClaimStatus; when the pod ends, the claim
// is released and deleted, and its device goes to the next pod. The
// simulated API server used to answer none of those calls (the claim's
// creation went to an empty fake clientset), so every binding failed
// after PreBind waited two minutes of wall time for the claim to appear,
// and no such pod was ever bound.
func TestDRAExtendedResourceClaims(t *testing.T) {
	sc := parseScenario(t, `name: extended
seed: 1
duration: 1m
scheduler: {plugins: upstream}
objects:
  - apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu.example.com}
    spec: {extendedResourceName: example.com/gpu}`+draSlice("n-0", 2)+`
nodes: [{name: n, count: 1, capacity: {cpu: "8", memory: 32Gi}}]
pods:
  - {name: a, count: 1, requests: {cpu: "1", memory: 1Gi, example.com/gpu: "1"}}
  - {name: b, count: 1, arrival: {at: 1s}, requests: {cpu: "1", memory: 1Gi, example.com/gpu: "2"}}
events:
  - {at: 20s, deletePods: {group: a}}
`)
	s := runSim(t, sc)
	b := boundAt(s)
	if b["a-0"] < 0 || b["a-0"] > time.Second {
		t.Fatalf("a bound at %v, want at once (%s)", b["a-0"], lastMessages(s)["a-0"])
	}
	if b["b-0"] < 20*time.Second || b["b-0"] > 21*time.Second {
		t.Errorf("b bound at %v, want within a second of a's deletion at 20s (%s)", b["b-0"], lastMessages(s)["b-0"])
	}
	p := s.cl.pods[types.NamespacedName{Namespace: "default", Name: "b-0"}]
	st := p.Status.ExtendedResourceClaimStatus
	if st == nil {
		t.Fatalf("b's status names no claim for its extended resources")
	}
	c := s.storedClaim("default", st.ResourceClaimName)
	if c == nil || c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 2 ||
		len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].UID != p.UID {
		t.Fatalf("b's claim %s: %+v, want 2 devices allocated and reserved for b", st.ResourceClaimName, c)
	}
	claims := 0
	for _, o := range s.obj.byKey {
		if _, ok := o.(*resourceapi.ResourceClaim); ok {
			claims++
		}
	}
	if claims != 1 {
		t.Errorf("%d claims left, want b's alone (a's deleted with a)", claims)
	}
	checkClaimsMatchPods(t, s)
}
