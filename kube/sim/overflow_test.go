package sim

import (
	"strings"
	"testing"
)

// TestOverflowingRequestsAreRefused: pods whose requests overflow int64
// are never bound, are tried once and parked with the reason, and do not
// disturb the accounting of the nodes the valid pods fill.
func TestOverflowingRequestsAreRefused(t *testing.T) {
	r := run(t, parse(t, `
name: overflow
nodes: [{name: n, count: 2, capacity: {cpu: "1", memory: 4Gi, pods: "110"}}]
pods:
  - {name: cpu-1e18, count: 1, requests: {cpu: "1e18"}}
  - {name: cpu-100p, count: 1, requests: {cpu: 100P}}
  - {name: cpu-max, count: 1, requests: {cpu: "9223372036854775807"}}
  - {name: mem-10e, count: 1, requests: {memory: 10E}}
  - {name: one-cpu, count: 3, requests: {cpu: "1"}, arrival: {at: 1s}}
`))
	if r.Scheduled != 2 || r.Pending != 5 {
		t.Fatalf("%d scheduled, %d pending; want the two 1-cpu nodes to take one 1-cpu pod each", r.Scheduled, r.Pending)
	}
	var got []string
	for _, c := range r.PendingReasons {
		got = append(got, c.Label)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		"invalid resource request cpu=1e18: overflows int64 milli-units",
		"invalid resource request cpu=100P: overflows int64 milli-units",
		"invalid resource request cpu=9223372036854775807: overflows int64 milli-units",
		"invalid resource request memory=10E: overflows int64",
		"Insufficient cpu",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no pending reason says %q; got:\n%s", want, all)
		}
	}
}
