package upstream

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Profile is the scheduler name every driver pod carries; hint and PreEnqueue
// maps are keyed by it.
const Profile = "default-scheduler"

// Fake plugin names used by the differential driver.
const (
	PluginA  = "PluginA" // interested in NodeAdd
	PluginB  = "PluginB" // interested in NodeAdd and NodeUpdate(taint)
	PluginC  = "PluginC" // interested in AssignedPodDelete
	GateName = "LabelGate"
)

// Label keys understood by the fake plugins.
const (
	// LabelGated: a pod carrying this label (any value) is held back by the
	// LabelGate PreEnqueue plugin.
	LabelGated = "schedq.test/gated"
	// LabelWake: comma-separated plugin names; under HintByLabel a plugin
	// answers Queue only for pods that list it here.
	LabelWake = "schedq.test/wake"
	// labelPolicy is stamped on the synthetic event object so that the hint
	// decision travels with the event (upstream replays events recorded while
	// a pod was in flight, so the policy must not be read from driver state).
	labelPolicy = "schedq.test/policy"
)

// Event names accepted by Driver.MoveAll.
type Event string

const (
	NodeAdd           Event = "NodeAdd"
	NodeUpdateTaint   Event = "NodeUpdateTaint"
	AssignedPodDelete Event = "AssignedPodDelete"
	// Wildcard is upstream's catch-all (Resource "*", ActionType All); no
	// hints are consulted and every parked pod is requeued.
	Wildcard Event = "Wildcard"
)

// HintPolicy selects what the fake plugins' queueing hints answer for one
// MoveAll call.
type HintPolicy string

const (
	HintQueueAll HintPolicy = "queue" // every hint answers Queue
	HintSkipAll  HintPolicy = "skip"  // every hint answers QueueSkip
	HintByLabel  HintPolicy = "label" // Queue iff the pod's LabelWake lists the plugin
	HintError    HintPolicy = "error" // every hint returns an error (upstream treats it as Queue)
)

func clusterEvent(e Event) fwk.ClusterEvent {
	switch e {
	case NodeAdd:
		return fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}
	case NodeUpdateTaint:
		return fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.UpdateNodeTaint}
	case AssignedPodDelete:
		return framework.EventAssignedPodDelete
	case Wildcard:
		return fwk.ClusterEvent{Resource: fwk.WildCard, ActionType: fwk.All}
	}
	panic("unknown event " + string(e))
}

var podLabelUpdate = fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodLabel}

// hintMap registers which fake plugin cares about which event.
func hintMap() queue.QueueingHintMapPerProfile {
	fn := func(plugin string) *queue.QueueingHintFunction {
		return &queue.QueueingHintFunction{PluginName: plugin, QueueingHintFn: HintFor(plugin)}
	}
	return queue.QueueingHintMapPerProfile{
		Profile: {
			clusterEvent(NodeAdd):           {fn(PluginA), fn(PluginB)},
			clusterEvent(NodeUpdateTaint):   {fn(PluginB)},
			clusterEvent(AssignedPodDelete): {fn(PluginC)},
			// The gate is released by a label update on the gated pod itself.
			podLabelUpdate: {{PluginName: GateName, QueueingHintFn: GateHint}},
		},
	}
}

type hintError struct{}

func (hintError) Error() string { return "fake hint error" }

// HintFor returns the deterministic hint function of a fake plugin. The policy
// is read from the event object's labels; without one, HintByLabel applies.
func HintFor(plugin string) fwk.QueueingHintFn {
	return func(_ klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
		policy := HintByLabel
		for _, o := range []interface{}{newObj, oldObj} {
			if o == nil {
				continue
			}
			if m, err := meta.Accessor(o); err == nil {
				if p, ok := m.GetLabels()[labelPolicy]; ok {
					policy = HintPolicy(p)
					break
				}
			}
		}
		switch policy {
		case HintQueueAll:
			return fwk.Queue, nil
		case HintSkipAll:
			return fwk.QueueSkip, nil
		case HintError:
			return fwk.QueueSkip, hintError{}
		}
		for _, name := range strings.Split(pod.Labels[LabelWake], ",") {
			if name == plugin {
				return fwk.Queue, nil
			}
		}
		return fwk.QueueSkip, nil
	}
}

// GateHint answers Queue once the updated pod no longer carries LabelGated.
func GateHint(_ klog.Logger, _ *v1.Pod, _, newObj interface{}) (fwk.QueueingHint, error) {
	if p, ok := newObj.(*v1.Pod); ok {
		if _, gated := p.Labels[LabelGated]; !gated {
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}

// labelGate is a PreEnqueue plugin that holds back pods carrying LabelGated.
type labelGate struct{}

var _ fwk.PreEnqueuePlugin = labelGate{}

func (labelGate) Name() string { return GateName }

func (labelGate) PreEnqueue(_ context.Context, p *v1.Pod) *fwk.Status {
	if _, gated := p.Labels[LabelGated]; gated {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "pod carries "+LabelGated)
	}
	return nil
}

func preEnqueueMap() map[string]map[string]fwk.PreEnqueuePlugin {
	return map[string]map[string]fwk.PreEnqueuePlugin{Profile: {GateName: labelGate{}}}
}

// Less orders by descending priority, then by earlier queue timestamp. It is
// the ordering the driver and the upstream benchmarks give the queue.
// Since v1.37 the queue orders entities (a pod or a pod group); both give
// their priority (a group's is its PodGroup's) and queue timestamp.
func Less(a, b fwk.QueuedEntityInfo) bool {
	pa, pb := a.GetPriority(), b.GetPriority()
	if pa != pb {
		return pa > pb
	}
	return a.GetTimestamp().Before(b.GetTimestamp())
}
