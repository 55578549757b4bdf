package scheduler

import (
	"context"
	"errors"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq/kube/framework"
)

// Probe runs the first half of a lone pod's cycle on kube-scheduler's
// framework (its profile's, Options.Profiles) for pod, as if no pod were nominated:
// PreFilter, Filter and Score on the cache's current state, ties broken
// with rnd, and returns Scheduled with the node it would choose, or
// Unschedulable with why not. It runs no PostFilter (preemption), assumes
// nothing and changes nothing the next cycles see: not the cache, the
// queue, where the next cycle starts filtering, the batch, nor
// Options.Rand. A what-if asks it whether a pod fits now and where.
// O(one cycle). It must not run concurrently with ScheduleOne: it uses
// the scheduling loop's snapshot.
func (s *Scheduler) Probe(ctx context.Context, pod *v1.Pod, rnd *rand.Rand) (Outcome, error) {
	p := s.profileFor(pod)
	if p == nil {
		return Outcome{}, errors.New("probe: " + errNoProfile(pod))
	}
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		return Outcome{}, err
	}
	next, batch, cycle, keep, removals, cur := s.nextStart, s.batch, s.fwCycle, s.o.Rand, s.snapRemovals, s.cur
	defer func() {
		s.nextStart, s.batch, s.fwCycle, s.o.Rand, s.snapRemovals, s.cur = next, batch, cycle, keep, removals, cur
		s.ownNom, s.hasNom, s.sig = "", false, nil
	}()
	s.batch, s.o.Rand, s.cur = fwBatch{}, rnd, p
	s.ownNom, s.hasNom = "", false
	clear(s.fwNom.pods)
	s.fwCycle++
	s.sig = s.cur.fw.SignPod(ctx, pod)
	if _, s.snapRemovals, err = s.cache.updateSnapshot(s.cur.fw.Snapshot()); err != nil {
		return Outcome{}, err
	}
	out := s.fwFind(ctx, fwframework.NewCycleState(), pi)
	if out.Result == Error {
		return out, errors.New(out.Message)
	}
	return out, nil
}
