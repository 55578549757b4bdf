package app

import (
	"testing"
	"time"
)

// Each workload of BenchmarkWholeScheduler, made small, runs to its end
// with each scheduler: every pod that fits is bound, once (the fake
// refuses a second binding), and no pod that fits no node is. A
// workload the benchmark could not finish fails here, where CI sees it.
func TestWholeSchedulerWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kube-scheduler and schedq in-process; skipped with -short")
	}
	for _, w := range []benchWorkload{
		{name: "Small", nodes: 4, pods: 24},
		{name: "Arrivals", nodes: 4, pods: 24, arrive: true},
		{name: "Unschedulable", nodes: 4, pods: 24, stuck: 6, churn: true},
		{name: "Gangs", nodes: 4, pods: 24, gangSize: 8},
	} {
		for _, who := range []string{"kube-scheduler", "schedq"} {
			t.Run(w.name+"/"+who, func(t *testing.T) {
				gateFor(t, w, who)
				defer setWatchBuffer(w)()
				c := newBenchCluster(w)
				c.patience = time.Minute
				runWorkload(t, c, w, who)
				if got := c.bound.Load(); got != int64(w.pods) {
					t.Errorf("%d pods bound, want %d", got, w.pods)
				}
				if got := c.stuckBound.Load(); got != 0 {
					t.Errorf("%d pods that fit no node were bound", got)
				}
			})
		}
	}
}
