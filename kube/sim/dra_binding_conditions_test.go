package sim

import (
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
)

// TestDRABindingConditionsAreMet: a device with binding conditions
// (DRADeviceBindingConditions, beta and on in v1.37: a fabric-attached
// GPU, say) is bound once its driver says it is ready. The simulator
// plays that driver: when DynamicResources writes the allocation at
// PreBind, it sets the device's binding conditions true, so the pod is
// bound at once. It used to set none, and PreBind, after it could record
// its event at all (the framework had no event recorder, and panicked),
// would have polled the wall clock for ten minutes: no such pod was ever
// bound.
func TestDRABindingConditionsAreMet(t *testing.T) {
	sc := parseScenario(t, `name: bindingconditions
seed: 1
duration: 1m
scheduler: {plugins: upstream}
objects:
  - apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu.example.com}
  - apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata: {name: one-gpu}
    spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}
  - apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {name: n-0-gpus}
    spec: {nodeName: n-0, driver: gpu.example.com, pool: {name: n-0, generation: 1, resourceSliceCount: 1}, devices: [{name: gpu-0, bindingConditions: [attached], bindingFailureConditions: [failed]}]}
nodes: [{name: n, count: 1, capacity: {cpu: "8", memory: 32Gi}}]
pods:
  - {name: a, count: 1, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
`)
	start := time.Now()
	s := runSim(t, sc)
	if b := boundAt(s)["a-0"]; b < 0 || b > time.Second {
		t.Fatalf("a bound at %v, want at once (%s)", b, lastMessages(s)["a-0"])
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the run took %v of wall time: PreBind waited for the conditions on the real clock", d)
	}
	p := s.cl.pods[types.NamespacedName{Namespace: "default", Name: "a-0"}]
	names := ClaimNames(p)
	if len(names) != 1 {
		t.Fatalf("a's claims %v", names)
	}
	c := s.storedClaim("default", names[0])
	if c == nil || len(c.Status.Devices) != 1 || !apimeta.IsStatusConditionTrue(c.Status.Devices[0].Conditions, "attached") {
		t.Errorf("a's claim %+v, want its device's condition attached true", c)
	}
	checkClaimsMatchPods(t, s)
}
