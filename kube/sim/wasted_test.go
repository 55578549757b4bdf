package sim

import "testing"

// TestWastedAttemptsCountGroupAttempts: an attempt that fails for the
// same reasons as the last failure of what was tried is wasted, a gang's
// group attempt as a lone pod's. A pod and a gang that fit nowhere are
// tried again by each leftover flush and fail the same way: every attempt
// after the first is wasted (a node that arrives late keeps the run
// going: with only parked pods left and nothing to come, it ends). Before, group attempts were never counted.
func TestWastedAttemptsCountGroupAttempts(t *testing.T) {
	for _, tc := range []struct{ name, pods string }{
		{name: "lone pod", pods: `{name: huge, count: 1, requests: {cpu: "8"}}`},
		{name: "gang", pods: `{name: g, count: 3, requests: {cpu: "8"}, gang: {size: 3}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := edgeReport(t, `
name: wasted
duration: 20m
nodes:
  - {name: a, count: 1, capacity: {cpu: "4", memory: 4Gi, pods: "10"}}
pods:
  - `+tc.pods+`
events:
  - {at: 19m, addNodes: {name: late, count: 1, capacity: {cpu: "1", memory: 1Gi, pods: "10"}}} # the run goes on till then
`)
			if r.Attempts < 3 || r.WastedAttempts != r.Attempts-1 {
				t.Fatalf("%d attempts, %d wasted; want at least 3, all but the first wasted", r.Attempts, r.WastedAttempts)
			}
		})
	}
}
