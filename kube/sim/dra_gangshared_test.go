package sim

import (
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// TestDRAGangSharedClaimMemberFitsNowhere: three members of a gang of
// minCount 2 share one claim, allocated on a-0's device and reserved for
// no one (as a binding that failed after PreBind leaves it). a-0 has room
// for two members, b-0 room but no device: the third fits nowhere after
// the first two are placed on a-0. Its DynamicResources PostFilter must
// not run then (kube-scheduler runs PostFilter for a pod group only after
// a cycle that failed): it would deallocate the claim, which the two
// reserve only at PreBind, and their PreBind would fail. The gang binds
// its two on a-0, the claim still allocated there and reserved for both.
func TestDRAGangSharedClaimMemberFitsNowhere(t *testing.T) {
	sc := parseScenario(t, `name: gangshared
seed: 1
duration: 2m
scheduler: {plugins: upstream, bindLatency: 1s}
objects:`+draObjects(1, "a-0")+`
  - apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata: {name: shared}
    spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}
    status:
      allocation:
        devices: {results: [{request: gpu, driver: gpu.example.com, pool: a-0, device: gpu-0}]}
        nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [a-0]}]}]}
nodes:
  - {name: a, count: 1, capacity: {cpu: "2", memory: 32Gi}}
  - {name: b, count: 1, capacity: {cpu: "8", memory: 32Gi}}
pods:
  - {name: p, count: 3, gang: {size: 3, minCount: 2}, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimName: shared}]}
`)
	s := runSim(t, sc)
	bound := boundMembers(t, s)
	for _, st := range s.order {
		if n := s.cl.pods[st.key].Spec.NodeName; !st.bound.IsZero() && n != "a-0" {
			t.Errorf("%s on %q, want a-0", st.key.Name, n)
		}
	}
	if len(bound) != 2 {
		t.Errorf("members bound: %v, want 2", bound)
	}
	c := sharedClaim(t, s)
	reserved := reservedFor(c)
	if a := c.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Pool != "a-0" || !slices.Equal(reserved, bound) {
		t.Errorf("claim shared: allocation %v, reserved for %v; want allocated on a-0, reserved for the bound %v", a, reserved, bound)
	}
}

// boundMembers lists the names of the pods bound by the end of s, sorted,
// and logs why each of the others is not.
func boundMembers(t *testing.T, s *sim) []string {
	t.Helper()
	var bound []string
	for _, st := range s.order {
		if st.bound.IsZero() {
			t.Logf("%s not bound: %s", st.key.Name, st.lastMessage)
			continue
		}
		bound = append(bound, st.key.Name)
	}
	slices.Sort(bound)
	return bound
}

// reservedFor lists the names of the pods c is reserved for, sorted.
func reservedFor(c *resourceapi.ResourceClaim) []string {
	var reserved []string
	for _, r := range c.Status.ReservedFor {
		reserved = append(reserved, r.Name)
	}
	slices.Sort(reserved)
	return reserved
}

// sharedClaim returns the scenario's claim shared as the simulated API
// server holds it at the end.
func sharedClaim(t *testing.T, s *sim) *resourceapi.ResourceClaim {
	t.Helper()
	for _, o := range s.obj.byKey {
		if x, ok := o.(*resourceapi.ResourceClaim); ok && x.Name == "shared" {
			return x
		}
	}
	t.Fatal("claim shared missing")
	return nil
}

// TestDRAGangSharesUnallocatedClaim: the members of a gang share one
// claim that no one has allocated yet. Within the group's trial the
// first member's allocation, held in flight until its PreBind writes it,
// is the others' too. Cases: the gang fits and every member binds, the
// claim allocated once and reserved for each of them; the gang cannot
// meet its quorum (its third member fits nowhere once two are placed),
// so what the trial allocated is undone and the claim stays
// unallocated, reserved for no one.
func TestDRAGangSharesUnallocatedClaim(t *testing.T) {
	for _, tc := range []struct {
		name, pods string
		gpus       int
		wantBound  []string
		wantOwn    int // claims of the members' own allocated, on devices other than the shared one
	}{
		{
			name:      "gang of 2 binds",
			pods:      `{name: p, count: 2, gang: {size: 2, minCount: 2}, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimName: shared}]}`,
			wantBound: []string{"p-0", "p-1"},
		},
		{
			name:      "gang of 4 binds",
			pods:      `{name: p, count: 4, gang: {size: 4, minCount: 3}, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimName: shared}]}`,
			wantBound: []string{"p-0", "p-1", "p-2", "p-3"},
		},
		{
			name:      "gang of 2 with a claim of its own each binds",
			pods:      `{name: p, count: 2, gang: {size: 2, minCount: 2}, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimName: shared}, {name: own, resourceClaimTemplateName: one-gpu}]}`,
			gpus:      3,
			wantBound: []string{"p-0", "p-1"},
			wantOwn:   2,
		},
		{
			name: "failed quorum allocates nothing",
			pods: `{name: p, count: 3, gang: {size: 3, minCount: 3}, requests: {cpu: "3", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimName: shared}]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseScenario(t, `name: gangshared
seed: 1
duration: 2m
scheduler: {plugins: upstream, bindLatency: 1s}
objects:`+draObjects(max(tc.gpus, 1), "a-0")+`
  - apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata: {name: shared}
    spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}
nodes:
  - {name: a, count: 1, capacity: {cpu: "8", memory: 32Gi}}
pods:
  - `+tc.pods+`
`)
			s := runSim(t, sc)
			bound := boundMembers(t, s)
			if !slices.Equal(bound, tc.wantBound) {
				t.Errorf("members bound: %v, want %v", bound, tc.wantBound)
			}
			c := sharedClaim(t, s)
			a, reserved := c.Status.Allocation, reservedFor(c)
			switch {
			case len(tc.wantBound) == 0 && (a != nil || len(reserved) != 0):
				t.Errorf("claim shared: allocation %v, reserved for %v; want neither", a, reserved)
			case len(tc.wantBound) > 0 && (a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Pool != "a-0" || !slices.Equal(reserved, tc.wantBound)):
				t.Errorf("claim shared: allocation %v, reserved for %v; want allocated on a-0, reserved for %v", a, reserved, tc.wantBound)
			}
			if own := ownDevices(s, a); len(own) != tc.wantOwn {
				t.Errorf("the members' own claims hold devices %v, want %d others than the shared claim's", own, tc.wantOwn)
			}
		})
	}
}

// ownDevices lists the devices allocated at the end of s to the claims
// other than "shared", each once, failing on one that is shared's
// (allocated as shared) or allocated twice.
func ownDevices(s *sim, shared *resourceapi.AllocationResult) []string {
	seen := map[string]bool{}
	if shared != nil {
		for _, r := range shared.Devices.Results {
			seen[r.Device] = true
		}
	}
	var own []string
	for _, o := range s.obj.byKey {
		c, ok := o.(*resourceapi.ResourceClaim)
		if !ok || c.Name == "shared" || c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if seen[r.Device] {
				own = append(own, r.Device+" (twice)")
				continue
			}
			seen[r.Device] = true
			own = append(own, r.Device)
		}
	}
	slices.Sort(own)
	return own
}
