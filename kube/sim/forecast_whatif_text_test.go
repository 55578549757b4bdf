package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestWhatIfWriteText: each kind of answer reads as documented, and the
// list of changed forecasts stops at 20.
func TestWhatIfWriteText(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	pod := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: n} }
	starts := PodForecast{Starts: true, Wait: 90 * time.Second, Node: "n1",
		Basis: []SourceCount{{Source: "history", Count: 3}}, Unknown: 2}
	many := make([]ForecastChange, 25)
	for i := range many {
		many[i] = ForecastChange{Pod: pod(fmt.Sprint("p", i)), Before: PodForecast{}, After: starts}
	}
	for _, tc := range []struct {
		name string
		x    WhatIf
		want []string
		not  []string
	}{
		{"fits now", WhatIf{Pending: 3, Arrivals: "none", Pods: []WhatIfPod{{Pod: pod("w"), FitsNow: true, Node: "n1", Forecast: starts}}},
			[]string{"at 2026-01-01T00:05:00Z, 3 pods pending; horizon 1h0m0s; new arrivals: none\n",
				"default/w: fits now on n1\n",
				"  predicted start: in 1m30s on n1 (after ends by 3 history); 2 running pods end at an unknown time\n",
				"pending pods whose predicted start changes: 0\n"}, nil},
		{"preempts", WhatIf{Pods: []WhatIfPod{{Pod: pod("w"), Node: "n2", Preempts: []types.NamespacedName{pod("a"), pod("b")}}}},
			[]string{"default/w: fits on n2 by preempting default/a, default/b\n", "predicted start: not within the horizon of 1h0m0s\n"}, nil},
		{"does not fit", WhatIf{Pods: []WhatIfPod{{Pod: pod("w")}}}, []string{"default/w: does not fit now\n"}, nil},
		{"does not fit, with the reason", WhatIf{Pods: []WhatIfPod{{Pod: pod("w"), Reason: "0/2 nodes are available: 2 Insufficient cpu."}}},
			[]string{"default/w: does not fit now: 0/2 nodes are available: 2 Insufficient cpu.\n"}, nil},
		{"one pod pending", WhatIf{Pending: 1, Arrivals: "none"}, []string{", 1 pod pending;"}, nil},
		{"gang", WhatIf{Pods: []WhatIfPod{{Pod: pod("w"), Forecast: PodForecast{Starts: true, Wait: time.Minute, Gang: "default/g"}}}},
			[]string{"predicted start: in 1m0s, with its gang default/g\n"}, nil},
		{"changes listed up to 20", WhatIf{Changed: many},
			[]string{"changes: 25\n", "  default/p19: not within the horizon of 1h0m0s → in 1m30s on n1", "  … and 5 more (the JSON answer lists them all)\n"},
			[]string{"default/p20:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tc.x.WriteText(&b, at, time.Hour)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("text lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tc.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("text has %q:\n%s", w, b.String())
				}
			}
		})
	}
}
