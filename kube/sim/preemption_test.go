package sim

import (
	"strings"
	"testing"
	"time"
)

// TestPreemptionGracePeriodAndNoRecreate: victims that terminate for a
// while still make room in the end, and are not created again unless the
// scenario says so; the preemptor does not preempt again meanwhile.
func TestPreemptionGracePeriodAndNoRecreate(t *testing.T) {
	sc := load(t, "PriorityPressure")
	sc.Scheduler.Preemption = &PreemptionSpec{GracePeriod: 10 * time.Second}
	r := run(t, sc)
	x := r.Preemption
	if x == nil || x.Preemptions != 100 || x.Victims != 100 || x.Recreated != 0 || r.ByPriority[0].Scheduled != 100 {
		t.Fatalf("preemption %+v, by priority %+v", x, r.ByPriority)
	}
	if r.Pods != 300 || r.Pending != 0 {
		t.Fatalf("pods %d, pending %d", r.Pods, r.Pending)
	}
}

func TestPreemptionNegativeGracePeriodIsAnError(t *testing.T) {
	sc := load(t, "PriorityPressure")
	sc.Scheduler.Preemption = &PreemptionSpec{GracePeriod: -time.Second}
	if _, err := Run(sc, Options{}); err == nil || !strings.Contains(err.Error(), "gracePeriod") {
		t.Fatalf("err %v", err)
	}
}
