package sim

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/scheduler"
)

// gangRelease returns the options of gang release as the live scheduler
// has it (its terms enable it with the API releaser): a gang left
// below its minCount, whose missing members still do not fit
// scheduler.DefaultGangReleaseAfter after its first failed attempt, has
// its bound members deleted and recreated, then is scheduled whole. The
// scheduler releases only members a controller owns; the scenario's own
// pods have none, so only a forecast's pods (from the live state) or a
// snapshot's can be released.
func (s *sim) gangRelease() *scheduler.GangReleaseOptions {
	return &scheduler.GangReleaseOptions{Releaser: releaser{s}}
}

// releaser deletes a released gang's members as the API server would,
// after the bind latency, and creates each again as a new pending pod,
// as its controller would. A member leaves at once: the simulator gives
// a deleted pod no grace period but the scenario's preemption one.
type releaser struct{ s *sim }

// Wait implements scheduler.Releaser: the releases are events of the
// simulation's own loop, which no term's end waits for.
func (r releaser) Wait() {}

// Release implements scheduler.Releaser.
func (r releaser) Release(_ context.Context, _ string, members []*v1.Pod, _ string, done func([]error)) {
	s := r.s
	s.at(s.now.Add(s.apiLatency()), func() {
		for _, m := range members {
			s.releaseMember(framework.Key(m), m.UID)
		}
		done(nil)
	})
}

// releaseMember deletes the pod with key if it is still the one with
// uid (the API releaser's precondition) and creates it again, pending.
func (s *sim) releaseMember(key types.NamespacedName, uid types.UID) {
	cur := s.cl.pods[key]
	if cur == nil || cur.UID != uid {
		return
	}
	s.ended(cur, endDeleted)
	delete(s.cl.pods, key)
	s.h.DeletePod(cur)
	again := cur.DeepCopy()
	again.Spec.NodeName = ""
	again.UID = s.cl.nextUID()
	again.Status = v1.PodStatus{}
	again.DeletionTimestamp = nil
	if s.x.released != nil {
		s.x.released(cur, again)
	}
	s.arrive(again)
}
