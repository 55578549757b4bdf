package sim

import (
	"strings"
	"testing"
)

// TestDRABindFailureFreesTheDevices: p's claim is allocated at PreBind on
// a-0, whose node is removed before the binding is answered; the binding
// fails, and the claim stays allocated on a-0's device, reserved for no
// one. DynamicResources' PostFilter then deallocates it, with or without
// preemption (kube-scheduler runs the other PostFilter plugins when
// DefaultPreemption is off), and p binds on b-0, which joined meanwhile.
func TestDRABindFailureFreesTheDevices(t *testing.T) {
	for _, tc := range []struct {
		name, preemption string
	}{
		{name: "preemption off"},
		{name: "preemption on", preemption: ", preemption: {}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseScenario(t, `name: bindfail
seed: 1
duration: 2m
scheduler: {plugins: upstream, bindLatency: 1s`+tc.preemption+`}
objects:`+draObjects(1, "a-0")+`
nodes: [{name: a, count: 1, capacity: {cpu: "8", memory: 32Gi}}]
pods:
  - {name: p, count: 1, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
events:
  - {at: 500ms, removeNodes: {group: a}}
  - {at: 600ms, addNodes: {name: b, count: 1, capacity: {cpu: "8", memory: 32Gi}}}
  - at: 600ms
    createObjects:`+strings.ReplaceAll(draSlice("b-0", 1), "\n  ", "\n      ")+`
`)
			s := runSim(t, sc)
			if b := boundAt(s)["p-0"]; b < 0 {
				t.Fatalf("p-0 never bound: %s", lastMessages(s)["p-0"])
			}
			if n := s.cl.pods[s.order[0].key].Spec.NodeName; n != "b-0" {
				t.Errorf("p-0 on %q, want b-0", n)
			}
			checkClaimsMatchPods(t, s)
		})
	}
}

// TestDRAGangBindFailureFreesTheDevices: as TestDRABindFailureFreesTheDevices,
// for a gang of two: both members' claims are allocated at PreBind on a-0,
// removed before the bindings are answered; the gang binds whole on b-0.
func TestDRAGangBindFailureFreesTheDevices(t *testing.T) {
	sc := parseScenario(t, `name: gangbindfail
seed: 1
duration: 5m
scheduler: {plugins: upstream, bindLatency: 1s}
objects:`+draObjects(2, "a-0")+`
nodes: [{name: a, count: 1, capacity: {cpu: "8", memory: 32Gi}}]
pods:
  - {name: p, count: 2, gang: {size: 2}, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
events:
  - {at: 500ms, removeNodes: {group: a}}
  - {at: 600ms, addNodes: {name: b, count: 1, capacity: {cpu: "8", memory: 32Gi}}}
  - at: 600ms
    createObjects:`+strings.ReplaceAll(draSlice("b-0", 2), "\n  ", "\n      ")+`
`)
	s := runSim(t, sc)
	for _, st := range s.order {
		if st.bound.IsZero() {
			t.Errorf("%s never bound: %s", st.key.Name, st.lastMessage)
		} else if n := s.cl.pods[st.key].Spec.NodeName; n != "b-0" {
			t.Errorf("%s on %q, want b-0", st.key.Name, n)
		}
	}
	checkClaimsMatchPods(t, s)
}
