package sim

import (
	"strings"
	"testing"
	"time"
)

// TestDRAMissingObjectWakesThePod: a pod whose ResourceClaim, or whose
// claim's DeviceClass, does not exist yet waits (gated by DynamicResources'
// PreEnqueue without its claim, tried once and refused with the plugin's
// reason without its class) and is bound within a second of the object's
// creation at 30s: its event wakes it, not the queue's 5-minute flush.
func TestDRAMissingObjectWakesThePod(t *testing.T) {
	const class = `
  - apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu.example.com}
    spec: {selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]}`
	const claim = `
  - apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata: {name: gpu-claim}
    spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}`
	for _, tc := range []struct {
		name           string
		there, missing string
		attempts       int
		reason         string // the last failure's message, before the object came
	}{
		{"resource claim", class, claim, 0, ""},
		{"device class", claim, class, 1, "device class gpu.example.com does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseScenario(t, `
name: missing
duration: 2m
objects:`+tc.there+draSlice("n-0", 1)+`
nodes: [{name: n, count: 1, capacity: {cpu: "4", memory: 8Gi}}]
pods:
  - {name: p, count: 1, requests: {cpu: "1"}, resourceClaims: [{name: gpu, resourceClaimName: gpu-claim}]}
events:
  - at: 30s
    createObjects:`+strings.ReplaceAll(tc.missing, "\n", "\n    ")+`
`)
			s := runSim(t, sc)
			st := s.order[0]
			switch {
			case st.bound.IsZero():
				t.Fatalf("never bound (%s)", st.lastMessage)
			case st.bound.Before(epoch.Add(30*time.Second)) || st.bound.After(epoch.Add(31*time.Second)):
				t.Errorf("bound at %v, want within 1s of the %s's creation at 30s", st.bound.Sub(epoch), tc.name)
			case st.attempts != tc.attempts+1:
				t.Errorf("%d attempts, want %d", st.attempts, tc.attempts+1)
			}
			if tc.reason != "" && !strings.Contains(st.lastMessage, tc.reason) {
				t.Errorf("the refusal before the %s came: %q, want %q", tc.name, st.lastMessage, tc.reason)
			}
		})
	}
}

// TestReportGivesTheGateReason: a pod held back at PreEnqueue is reported
// pending with the gating plugin's own reason, as schedq explain gives
// it, not the plugin's name alone: which claim or template is missing,
// which gates are left.
func TestReportGivesTheGateReason(t *testing.T) {
	for _, tc := range []struct {
		name, pod, want string
	}{
		{"missing resource claim", `{name: p, count: 1, requests: {cpu: "1"}, resourceClaims: [{name: gpu, resourceClaimName: nope}]}`,
			`gated by DynamicResources: could not find ResourceClaim "default/nope"`},
		{"missing claim template", `{name: p, count: 1, requests: {cpu: "1"}, resourceClaims: [{name: gpu, resourceClaimTemplateName: nope}]}`,
			`gated by DynamicResources: `},
		{"scheduling gate", `{name: p, count: 1, requests: {cpu: "1"}, schedulingGates: [example.com/g]}`,
			`gated by SchedulingGates: waiting for scheduling gates: [example.com/g]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(parseScenario(t, `
name: gated
duration: 1m
nodes: [{name: n, count: 1, capacity: {cpu: "4", memory: 8Gi}}]
pods:
  - `+tc.pod+`
`), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.PendingReasons) != 1 || !strings.HasPrefix(r.PendingReasons[0].Label, tc.want) {
				t.Errorf("pending: %+v, want one line starting %q", r.PendingReasons, tc.want)
			}
		})
	}
}
