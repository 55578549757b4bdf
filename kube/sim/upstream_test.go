package sim

import (
	"encoding/json"
	"strings"
	"testing"
)

// upstreamScenario loads a built-in scenario and runs it on
// kube-scheduler's framework.
func upstreamScenario(t testing.TB, name string) *Scenario {
	t.Helper()
	sc := load(t, name)
	if err := sc.Set("plugins", PluginsUpstream); err != nil {
		t.Fatal(err)
	}
	return sc
}

// smallArrival is NodeArrival made small: pods wait for nodes that join.
const smallArrival = `
name: small
seed: 1
nodes:
  - {name: node, count: 4, capacity: {cpu: "8", memory: 32Gi}, zones: 2}
pods:
  - {name: first, count: 30, requests: {cpu: "1", memory: 2Gi}}
  - {name: waiting, count: 60, requests: {cpu: "1", memory: 2Gi}, arrival: {at: 2s, rate: 20}}
events:
  - {at: 30s, addNodes: {name: wave1, count: 4, capacity: {cpu: "8", memory: 32Gi}, zones: 2}}
  - {at: 60s, addNodes: {name: wave2, count: 4, capacity: {cpu: "8", memory: 32Gi}, zones: 2}}
`

// TestUpstreamDeterministic: with kube-scheduler's framework, the same
// scenario and seed give the same report, byte for byte, and a different
// seed a different one (the pick among the best nodes is the seed's).
func TestUpstreamDeterministic(t *testing.T) {
	report := func(seed uint64) string {
		sc, err := Parse([]byte(smallArrival))
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Set("plugins", PluginsUpstream); err != nil {
			t.Fatal(err)
		}
		sc.Seed = seed
		r := run(t, sc)
		r.Wall = nil
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := report(1), report(1)
	if a != b {
		t.Fatalf("two runs of one seed differ:\n%s\n%s", a, b)
	}
	if c := report(2); c == a {
		t.Errorf("seeds 1 and 2 give the same report")
	}
}

// TestUpstreamSettingsRefused: settings of schedq's own plugins, or an
// unknown plugin set, are refused with the field named.
func TestUpstreamSettingsRefused(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{"plugins", "kube", `scheduler.plugins: "kube" is not schedq or upstream`},
		{"scoring", "balanced", "scheduler.scoring: sets schedq's scoring"},
	} {
		sc := upstreamScenario(t, "NodeArrival")
		err := sc.Set(tc.key, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
	sc := load(t, "NodeArrival")
	if err := sc.Set("config", "x.yaml"); err == nil || !strings.Contains(err.Error(), "scheduler.config: is kube-scheduler's profile") {
		t.Errorf("config without upstream: %v", err)
	}
}
