package sim

import (
	"encoding/json"
	"testing"
	"time"
)

// TestUpstreamPriorityPressure: PriorityPressure on kube-scheduler's
// framework, whose DefaultPreemption chooses the victims: 100 high-priority
// pods preempt one low pod each and are all bound, with and without a
// grace period (victims that terminate for a while are not chosen again),
// and two runs give the same report, byte for byte.
func TestUpstreamPriorityPressure(t *testing.T) {
	for _, grace := range []time.Duration{0, 10 * time.Second} {
		report := func() (*Report, string) {
			sc := upstreamScenario(t, "PriorityPressure")
			sc.Scheduler.Preemption.GracePeriod = grace
			r := run(t, sc)
			r.Wall = nil
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			return r, string(b)
		}
		r, a := report()
		x := r.Preemption
		if x == nil || x.Preemptions != 100 || x.Victims != 100 || x.Recreated != 100 ||
			len(x.ByPriority) != 2 || x.ByPriority[1] != (PreemptionCount{Priority: 0, Victims: 100}) {
			t.Fatalf("grace %v: preemption %+v", grace, x)
		}
		if len(r.ByPriority) != 2 || r.ByPriority[0].Priority != 1000 || r.ByPriority[0].Scheduled != 100 {
			t.Fatalf("grace %v: by priority %+v", grace, r.ByPriority)
		}
		if _, b := report(); a != b {
			t.Fatalf("grace %v: two runs differ:\n%s\n%s", grace, a, b)
		}
	}
}
