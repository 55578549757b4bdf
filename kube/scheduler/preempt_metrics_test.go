package scheduler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// victimsExposition is scheduler_preemption_victims after preemptions of
// one victim each, n of them.
func victimsExposition(n int) string {
	var b strings.Builder
	b.WriteString("# HELP scheduler_preemption_victims Number of selected preemption victims\n")
	b.WriteString("# TYPE scheduler_preemption_victims histogram\n")
	for _, le := range []string{"1", "2", "4", "8", "16", "32", "64", "+Inf"} {
		fmt.Fprintf(&b, "scheduler_preemption_victims_bucket{le=%q} %d\n", le, n)
	}
	fmt.Fprintf(&b, "scheduler_preemption_victims_sum %d\nscheduler_preemption_victims_count %d\n", n, n)
	return b.String()
}

// TestPreemptionVictimsMetricCountsOnlyPreemptions: a pod nominated to
// a node where pods already leaving make room evicts nobody and is no
// preemption (the simulator's report does not count it either), so
// scheduler_preemption_victims observes nothing for it; kube-scheduler
// observes the histogram only for a preemption it carries out, whose
// victims it chose. Before, such a nomination was observed as a
// preemption of 0 victims, which the histogram's first bucket (le=1)
// counts with the preemptions of one victim.
func TestPreemptionVictimsMetricCountsOnlyPreemptions(t *testing.T) {
	f, e := newFWPreemptFixture(t, nil, nil)
	pm, err := NewPreemptionMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	f.s.pre.o.Metrics = pm
	f.h.AddNode(node("a", 2000))
	leaving := runningPod("leaving", "a", 1000, 1, t0)
	leaving.DeletionTimestamp = &metav1.Time{Time: t0}
	f.h.AddPod(leaving)
	f.h.AddPod(runningPod("stays", "a", 1000, 1, t0))
	tests := []struct {
		name     string
		pod      string
		milliCPU int64
		prio     int32
		victims  string
		observed int // preemptions observed so far
	}{
		{name: "leaving pods make room: no preemption", pod: "small", milliCPU: 1000, prio: 100, observed: 0},
		{name: "one victim", pod: "large", milliCPU: 2000, prio: 200, victims: "stays", observed: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.h.AddPod(prioPod(tc.pod, tc.milliCPU, tc.prio))
			if out := f.once(); out.Nominated != "a" || victimNames(out) != tc.victims {
				t.Fatalf("nominated %q, victims %q, calls %v: %s", out.Nominated, victimNames(out), e.calls, out.Message)
			}
			if err := testutil.CollectAndCompare(pm.victimsH, strings.NewReader(victimsExposition(tc.observed))); err != nil {
				t.Fatal(err)
			}
		})
	}
}
