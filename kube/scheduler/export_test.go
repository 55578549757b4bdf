package scheduler

import (
	"context"

	"github.com/schedq/schedq/kube/framework"
)

// PlanPreemption runs the preemption search of one cycle for pi, as
// ScheduleOne does after every node rejected it, and returns the outcome
// it would requeue with; for benchmarks in package scheduler_test.
func (s *Scheduler) PlanPreemption(ctx context.Context, pi *framework.PodInfo) Outcome {
	var out Outcome
	s.readNominations(framework.Key(pi.Pod), pi.Pod)
	s.cache.View(func(snap framework.Snapshot) {
		out = Outcome{Result: Unschedulable}
		s.planPreemption(ctx, pi, snap, &out)
	})
	s.forgetNominations()
	return out
}
