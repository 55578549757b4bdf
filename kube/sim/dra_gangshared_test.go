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
	var bound []string
	for _, st := range s.order {
		if st.bound.IsZero() {
			t.Logf("%s not bound: %s", st.key.Name, st.lastMessage)
			continue
		}
		bound = append(bound, st.key.Name)
		if n := s.cl.pods[st.key].Spec.NodeName; n != "a-0" {
			t.Errorf("%s on %q, want a-0", st.key.Name, n)
		}
	}
	slices.Sort(bound)
	if len(bound) != 2 {
		t.Errorf("members bound: %v, want 2", bound)
	}
	var c *resourceapi.ResourceClaim
	for _, o := range s.obj.byKey {
		if x, ok := o.(*resourceapi.ResourceClaim); ok && x.Name == "shared" {
			c = x
		}
	}
	if c == nil {
		t.Fatal("claim shared missing")
	}
	var reserved []string
	for _, r := range c.Status.ReservedFor {
		reserved = append(reserved, r.Name)
	}
	slices.Sort(reserved)
	if a := c.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Pool != "a-0" || !slices.Equal(reserved, bound) {
		t.Errorf("claim shared: allocation %v, reserved for %v; want allocated on a-0, reserved for the bound %v", a, reserved, bound)
	}
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
// claim that no one has allocated yet, and the gang cannot meet its
// quorum (its third member fits nowhere once two are placed): what the
// trial allocated is undone, and the claim stays unallocated, reserved
// for no one. (A gang sharing an unallocated claim that does fit never
// binds yet: see "Gangs and DynamicResources" in docs/framework.md.)
func TestDRAGangSharesUnallocatedClaim(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pods      string
		wantBound int
	}{
		{
			name:      "failed quorum allocates nothing",
			pods:      `  - {name: p, count: 3, gang: {size: 3, minCount: 3}, requests: {cpu: "3", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimName: shared}]}`,
			wantBound: 0, // a fits two: the third fits nowhere
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseScenario(t, `name: gangshared
seed: 1
duration: 2m
scheduler: {plugins: upstream, bindLatency: 1s}
objects:`+draObjects(1, "a-0")+`
  - apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata: {name: shared}
    spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}
nodes:
  - {name: a, count: 1, capacity: {cpu: "8", memory: 32Gi}}
pods:
`+tc.pods+"\n")
			s := runSim(t, sc)
			var bound []string
			for _, st := range s.order {
				if st.bound.IsZero() {
					t.Logf("%s not bound: %s", st.key.Name, st.lastMessage)
					continue
				}
				bound = append(bound, st.key.Name)
			}
			slices.Sort(bound)
			if len(bound) != tc.wantBound {
				t.Errorf("members bound: %v, want %d", bound, tc.wantBound)
			}
			c := sharedClaim(t, s)
			var reserved []string
			for _, r := range c.Status.ReservedFor {
				reserved = append(reserved, r.Name)
			}
			slices.Sort(reserved)
			a := c.Status.Allocation
			if tc.wantBound == 0 {
				if a != nil || len(reserved) != 0 {
					t.Errorf("claim shared: allocation %v, reserved for %v; want neither", a, reserved)
				}
				return
			}
			if a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Pool != "a-0" || !slices.Equal(reserved, bound) {
				t.Errorf("claim shared: allocation %v, reserved for %v; want allocated on a-0, reserved for the bound %v", a, reserved, bound)
			}
		})
	}
}
