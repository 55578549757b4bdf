package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/clusterevent"
)

// TestDRADeletedClaimKeepsItsDevicesWhileInUse: deleting a ResourceClaim
// that DynamicResources allocated does not free its devices while the pod
// it is reserved for runs. The API server only marks it deleted: PreBind
// gave it DRA's finalizer, which the resourceclaim controller removes
// once the claim is reserved for no pod and deallocated. a holds the
// node's one GPU through its own claim nb, deleted at 10s; b waits for a
// GPU. While a runs, b must not get nb's device (the simulator used to
// drop the claim at once and hand the device out twice); once a is
// deleted, nb is deallocated and goes, and b binds.
func TestDRADeletedClaimKeepsItsDevicesWhileInUse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events string
		bound  bool          // b is bound
		after  time.Duration // not before
		nbLeft bool          // claim nb still stored at the end, marked deleted
	}{
		{name: "holder runs", events: "\n  - {at: 10s, deleteObjects: [{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: nb}}]}", nbLeft: true},
		{name: "holder deleted later", events: "\n  - {at: 10s, deleteObjects: [{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: nb}}]}\n  - {at: 30s, deletePods: {group: a}}", bound: true, after: 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseScenario(t, claimNBScenario("claimdelete", tc.events))
			s := runSim(t, sc)
			b := boundAt(s)
			if b["a-0"] < 0 {
				t.Fatalf("a not bound: %v", lastMessages(s))
			}
			switch {
			case !tc.bound && b["b-0"] >= 0:
				t.Errorf("b bound at %v while a still holds the GPU through its deleted claim", b["b-0"])
			case tc.bound && b["b-0"] < tc.after:
				t.Errorf("b bound at %v, want after %v (%s)", b["b-0"], tc.after, lastMessages(s)["b-0"])
			}
			nb := s.storedClaim("default", "nb")
			switch {
			case tc.nbLeft && nb == nil:
				t.Errorf("claim nb gone while reserved for a running pod")
			case tc.nbLeft && (nb.DeletionTimestamp == nil || nb.Status.Allocation == nil):
				t.Errorf("claim nb: deletionTimestamp %v, allocation %v; want marked deleted and still allocated", nb.DeletionTimestamp, nb.Status.Allocation)
			case !tc.nbLeft && nb != nil:
				t.Errorf("claim nb left after its pod ended: %+v", nb.ObjectMeta)
			}
			checkClaimsMatchPods(t, s)
		})
	}
}

// TestDRADeletedClaimNotInUseGoesAtOnce: a claim that DRA allocated
// and that is reserved for no pod (its binding failed after PreBind, say)
// goes at its deletion: the controller deallocates it first, an update
// from allocated to not that wakes the pods waiting for devices, then it
// is removed. A claim without DRA's finalizer is simply removed.
func TestDRADeletedClaimNotInUseGoesAtOnce(t *testing.T) {
	claimUpdate := clusterevent.New(clusterevent.ResourceClaim, clusterevent.Update).Label
	claimDelete := clusterevent.New(clusterevent.ResourceClaim, clusterevent.Delete).Label
	for _, tc := range []struct {
		name      string
		finalizer bool
		wantMoves []string // the claim events sent to the queue, in order
	}{
		{name: "allocated, with the finalizer", finalizer: true, wantMoves: []string{claimUpdate + " allocated", claimUpdate + " deallocated", claimDelete}},
		{name: "without the finalizer", wantMoves: []string{claimDelete}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseScenario(t, loneNodeScenario)
			s, err := newSim(sc, Options{CheckInvariants: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nb"}}
			if tc.finalizer {
				c.Finalizers = []string{resourceapi.Finalizer}
				c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
					Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "n-0", Device: "gpu-0"}}}}
			}
			if !s.put(c) {
				t.Fatal(s.violation)
			}
			var moves []string
			s.o.Trace = func(op Op) {
				if op.Event.Kind != clusterevent.ResourceClaim {
					return
				}
				m := op.Event.Label
				if nw, ok := op.NewObj.(*resourceapi.ResourceClaim); ok && op.OldObj != nil {
					m += map[bool]string{true: " allocated", false: " deallocated"}[nw.Status.Allocation != nil]
				}
				moves = append(moves, m)
			}
			if !s.deleteClaim(s.storedClaim("default", "nb")) {
				t.Fatal(s.violation)
			}
			if nb := s.storedClaim("default", "nb"); nb != nil {
				t.Errorf("claim reserved for no pod left after its deletion: %+v", nb.ObjectMeta)
			}
			if !slices.Equal(moves, tc.wantMoves) {
				t.Errorf("events to the queue %q, want %q", moves, tc.wantMoves)
			}
		})
	}
}

// TestDRADeletedClaimGoesWhenUnreserved: a claim marked deleted whose
// last reservation DynamicResources' Unreserve removes (a binding that
// failed after PreBind) is then deallocated and removed by the
// controller, as an event after the plugin's write, not left holding
// its device for ever.
func TestDRADeletedClaimGoesWhenUnreserved(t *testing.T) {
	sc := parseScenario(t, loneNodeScenario)
	s, err := newSim(sc, Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nb", Finalizers: []string{resourceapi.Finalizer}}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "n-0", Device: "gpu-0"}}}}
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "x", UID: "x"}}
	if !s.put(c) || !s.deleteClaim(s.storedClaim("default", "nb")) {
		t.Fatal(s.violation)
	}
	if nb := s.storedClaim("default", "nb"); nb == nil || nb.DeletionTimestamp == nil {
		t.Fatalf("claim reserved for a pod: %v, want kept and marked deleted", nb)
	}
	unreserved := s.storedClaim("default", "nb").DeepCopy()
	unreserved.Status.ReservedFor = nil
	if _, err := s.updateClaim("default", "nb", unreserved.ResourceVersion, unreserved.UID, "status", unreserved); err != nil {
		t.Fatal(err)
	}
	if s.storedClaim("default", "nb") == nil {
		t.Fatal("claim removed during the plugin's own write")
	}
	if err := s.loop(); err != nil {
		t.Fatal(err)
	}
	if nb := s.storedClaim("default", "nb"); nb != nil {
		t.Errorf("claim marked deleted and reserved for no pod left: %+v", nb)
	}
}

// TestDRAUpdatedClaimKeepsItsAllocation: createObjects of a claim that
// exists updates it as the API server updates the main resource: its
// status (allocation, reservations) stays, so the GPU that a's claim nb
// holds is not handed to b when nb is relabelled at 10s; a spec change
// is refused, as the API server refuses it (a claim's spec is
// immutable), and fails the run.
func TestDRAUpdatedClaimKeepsItsAllocation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    string
		wantErr string
	}{
		{name: "labels", spec: "{devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}"},
		{name: "spec changed", spec: "{devices: {requests: [{name: gpu2, exactly: {deviceClassName: gpu.example.com}}]}}", wantErr: "spec: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseScenario(t, claimNBScenario("claimupdate", `
  - at: 10s
    createObjects:
      - apiVersion: resource.k8s.io/v1
        kind: ResourceClaim
        metadata: {name: nb, labels: {team: ml}}
        spec: `+tc.spec))
			s, err := newSim(sc, Options{CheckInvariants: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			err = s.loop()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("run ended with %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b := boundAt(s)["b-0"]; b >= 0 {
				t.Errorf("b bound at %v on the GPU a's relabelled claim still holds", b)
			}
			nb := s.storedClaim("default", "nb")
			if nb == nil || nb.Labels["team"] != "ml" || nb.Status.Allocation == nil || len(nb.Status.ReservedFor) != 1 {
				t.Errorf("claim nb after the update: %+v, want relabelled, still allocated and reserved for a", nb)
			}
			checkClaimsMatchPods(t, s)
		})
	}
}

// claimNBScenario is a scenario of one node with one GPU where pod a
// holds it through claim nb (created beside it, unallocated) and pod b,
// arriving at 1s, asks for a GPU of its own; events are the scenario's
// events after "events:".
func claimNBScenario(name, events string) string {
	return `name: ` + name + `
seed: 1
duration: 2m
scheduler: {plugins: upstream}
objects:` + draObjects(1, "n-0") + `
  - apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata: {name: nb}
    spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}
nodes: [{name: n, count: 1, capacity: {cpu: "8", memory: 32Gi}}]
pods:
  - {name: a, count: 1, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimName: nb}]}
  - {name: b, count: 1, arrival: {at: 1s}, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
events:` + events + "\n"
}

// loneNodeScenario is a scenario of one node with one GPU and one pod
// that arrives at 50s, for tests that write claims themselves.
var loneNodeScenario = `name: claimdelete
seed: 1
duration: 1m
scheduler: {plugins: upstream}
objects:` + draObjects(1, "n-0") + `
nodes: [{name: n, count: 1, capacity: {cpu: "8", memory: 32Gi}}]
pods: [{name: a, count: 1, arrival: {at: 50s}, requests: {cpu: "1"}}]
`
