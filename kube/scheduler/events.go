package scheduler

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
)

// PodUpdateEvents classifies an update of a queued pod into the
// fine-grained events plugins register for: labels changed, resources
// scaled down or up, scheduling gates removed, tolerations changed, the
// claims made for it named in its status (from its templates, or for its
// extended resources that DRA backs). An
// update that is none of these is one general Update event, which only
// plugins registered for all updates hear. The queue sends them about the
// pod itself, so the resource is TargetPod, as in kube-scheduler v1.37
// (AssignedPod for a pod already on a node).
func PodUpdateEvents(oldPod, newPod *v1.Pod) []schedq.Event {
	res := clusterevent.TargetPod
	if newPod.Spec.NodeName != "" {
		res = clusterevent.AssignedPod
	}
	var out []schedq.Event
	add := func(a schedq.Action) { out = append(out, clusterevent.New(res, a)) }
	if !maps.Equal(oldPod.Labels, newPod.Labels) {
		add(clusterevent.UpdatePodLabel)
	}
	if scaled(oldPod, newPod) {
		add(clusterevent.UpdatePodScaleDown)
	}
	if scaled(newPod, oldPod) {
		add(clusterevent.UpdatePodScaleUp)
	}
	if len(oldPod.Spec.SchedulingGates) > 0 && len(newPod.Spec.SchedulingGates) == 0 {
		add(clusterevent.UpdatePodSchedulingGatesEliminated)
	}
	if !equality.Semantic.DeepEqual(oldPod.Spec.Tolerations, newPod.Spec.Tolerations) {
		add(clusterevent.UpdatePodToleration)
	}
	if !equality.Semantic.DeepEqual(oldPod.Status.ResourceClaimStatuses, newPod.Status.ResourceClaimStatuses) ||
		!equality.Semantic.DeepEqual(oldPod.Status.ExtendedResourceClaimStatus, newPod.Status.ExtendedResourceClaimStatus) {
		add(clusterevent.UpdatePodGeneratedResourceClaim)
	}
	if len(out) == 0 {
		add(clusterevent.Update)
	}
	return out
}

// scaled reports whether any request of the pod went down or away from
// oldPod to newPod (with the arguments swapped: up, or added), counted as
// kube-scheduler counts them (framework.RequestOptions): a resize
// requested frees nothing until the status says it is done (or
// infeasible), and then the status's change is the scale-down.
func scaled(oldPod, newPod *v1.Pod) bool {
	opts := framework.RequestOptions()
	before, after := resourcehelper.PodRequests(oldPod, opts), resourcehelper.PodRequests(newPod, opts)
	for name, q := range before {
		n, ok := after[name]
		if !ok || n.Cmp(q) < 0 {
			return true
		}
	}
	return false
}

// NodeUpdateEvents classifies an update of a node: allocatable, labels,
// taints (and the unschedulable flag, which acts as a taint), conditions,
// annotations, the pod preemption policy, the declared features (which
// NodeDeclaredFeatures, in kube-scheduler v1.37's default profile, waits
// for). An update that changes none of these gives no event.
func NodeUpdateEvents(oldNode, newNode *v1.Node) []schedq.Event {
	var out []schedq.Event
	add := func(a schedq.Action) { out = append(out, clusterevent.New(clusterevent.Node, a)) }
	if !equality.Semantic.DeepEqual(oldNode.Status.Allocatable, newNode.Status.Allocatable) {
		add(clusterevent.UpdateNodeAllocatable)
	}
	if !maps.Equal(oldNode.Labels, newNode.Labels) {
		add(clusterevent.UpdateNodeLabel)
	}
	if oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints) {
		add(clusterevent.UpdateNodeTaint)
	}
	if !slices.EqualFunc(oldNode.Status.Conditions, newNode.Status.Conditions, func(a, b v1.NodeCondition) bool {
		return a.Type == b.Type && a.Status == b.Status
	}) {
		add(clusterevent.UpdateNodeCondition)
	}
	if !maps.Equal(oldNode.Annotations, newNode.Annotations) {
		add(clusterevent.UpdateNodeAnnotation)
	}
	if !equality.Semantic.DeepEqual(oldNode.Spec.PodPreemptionPolicy, newNode.Spec.PodPreemptionPolicy) {
		add(clusterevent.UpdateNodePreemptionPolicy)
	}
	if !slices.Equal(oldNode.Status.DeclaredFeatures, newNode.Status.DeclaredFeatures) {
		add(clusterevent.UpdateNodeDeclaredFeature)
	}
	return out
}
