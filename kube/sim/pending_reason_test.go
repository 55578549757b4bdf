package sim

import (
	"slices"
	"testing"
)

// TestPendingReasonAtTheEnd: a pod still pending when the run ends is
// labelled with what was happening to it, not "not tried yet" for every
// pod in activeQ or in flight: a pod whose binding was under way says
// so and names the node, and a pod back in activeQ after a failed
// attempt says it waits for another.
func TestPendingReasonAtTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []Count
	}{
		{
			name: "binding under way",
			yaml: `
name: binding
duration: 5s
scheduler: {bindLatency: 10s}
nodes: [{name: node, count: 1, capacity: {cpu: "8", memory: 32Gi}}]
pods: [{name: p, count: 1, requests: {cpu: "1"}}]
`,
			want: []Count{{"inflight: its binding to node-0 was under way when the run ended", 1}},
		},
		{
			name: "tried before, back in activeQ",
			yaml: `
name: again
duration: 2s
scheduler: {attemptCost: 3s}
nodes: [{name: small, count: 1, capacity: {cpu: "1", memory: 32Gi}}]
pods: [{name: p, count: 1, requests: {cpu: "2"}}]
events: [{at: 1s, addNodes: {name: big, count: 1, capacity: {cpu: "8", memory: 32Gi}}}]
`,
			want: []Count{{"active: tried before, waiting for another attempt when the run ended", 1}},
		},
		{
			name: "never tried",
			yaml: `
name: never
duration: 2s
scheduler: {attemptCost: 3s}
nodes: [{name: node, count: 1, capacity: {cpu: "8", memory: 32Gi}}]
pods: [{name: p, count: 2, requests: {cpu: "1"}}]
`,
			want: []Count{{"active: not tried yet when the run ended", 1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := edgeReport(t, tc.yaml)
			if !slices.Equal(r.PendingReasons, tc.want) {
				t.Errorf("pending reasons %+v, want %+v", r.PendingReasons, tc.want)
			}
		})
	}
}
