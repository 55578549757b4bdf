package main

import (
	"maps"
	"testing"
)

// metricByLabel sums a metric's samples by one label, skipping other
// metrics that share its name as a prefix and lines it cannot parse.
func TestMetricByLabel(t *testing.T) {
	text := `# HELP scheduler_schedule_attempts_total x
scheduler_schedule_attempts_total{profile="a",result="scheduled"} 3
scheduler_schedule_attempts_total{profile="b",result="scheduled"} 4
scheduler_schedule_attempts_total{profile="a",result="error"} 1
scheduler_schedule_attempts_total_other{profile="a"} 100
scheduler_schedule_attempts_total{profile="a"} notanumber
`
	for _, tc := range []struct {
		name, label string
		want        map[string]float64
	}{
		{"by result", "result", map[string]float64{"scheduled": 7, "error": 1}},
		{"all", "", map[string]float64{"": 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := metricByLabel(text, "scheduler_schedule_attempts_total", tc.label); !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
