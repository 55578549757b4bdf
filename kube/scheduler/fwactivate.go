package scheduler

import (
	"errors"
	"log/slog"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// queueActivator is the frameworks' PodActivator (what a plugin's
// fwk.Handle.Activate calls): it moves the pods named to activeQ through
// the scheduler's queue (Queue.Activate: from backoff or the parked pods,
// or at the end of their attempt if in flight), as kube-scheduler's
// framework activates them in its scheduling queue. Without it a plugin's
// call panicked on the framework's nil PodActivator. The pods are
// activated in key order, so that a run does not depend on the map's.
// Plugins call it with no lock of schedq's held (see Queue's lock order).
// O(p log p) for p pods, plus the queue's.
type queueActivator struct {
	q   Queue
	log *slog.Logger
}

// noActivator is a released scheduler's frameworks' PodActivator
// (Scheduler.Release): the term's queue is gone, and a standby replica's
// framework must not keep it alive. It activates nothing.
type noActivator struct{}

// Activate implements fwk.PodActivator: it does nothing.
func (noActivator) Activate(klog.Logger, map[string]*v1.Pod) {}

// Activate implements fwk.PodActivator.
func (a queueActivator) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	keys := make([]types.NamespacedName, 0, len(pods))
	for _, p := range pods {
		if p != nil {
			keys = append(keys, framework.Key(p))
		}
	}
	slices.SortFunc(keys, compareKeys)
	if err := a.q.Activate(keys...); err != nil && !errors.Is(err, schedq.ErrClosed) {
		a.log.Debug("activating pods a plugin asked for", "pods", len(keys), "err", err)
	}
}

// newFWCycleState returns a new cycle state for a pod's placement, with
// an empty PodsToActivate under fwframework.PodsToActivateKey, as
// kube-scheduler starts each pod's cycle (a group member's included):
// plugins add to it the pods to activate at the end of the pod's
// successful scheduling cycle and of its binding (activateStashed).
func newFWCycleState() *fwframework.CycleState {
	cs := fwframework.NewCycleState()
	cs.Write(fwframework.PodsToActivateKey, fwframework.NewPodsToActivate())
	return cs
}

// activateStashed activates the pods the plugins put in cs's
// PodsToActivate (queueActivator) and empties it, as kube-scheduler does
// at the end of a successful scheduling cycle and binding. Safe from the
// binding's goroutine: the plugins' writes are under its lock. O(p log p)
// for p pods, nothing if none.
func (s *Scheduler) activateStashed(cs fwk.CycleState) {
	if cs == nil {
		return
	}
	c, err := cs.Read(fwframework.PodsToActivateKey)
	if err != nil {
		return
	}
	stash, ok := c.(*fwframework.PodsToActivate)
	if !ok {
		return
	}
	stash.Lock()
	pods := stash.Map
	if len(pods) > 0 {
		stash.Map = map[string]*v1.Pod{}
	}
	stash.Unlock()
	if len(pods) > 0 {
		queueActivator{q: s.queue, log: s.o.Logger}.Activate(klog.Logger{}, pods)
	}
}
