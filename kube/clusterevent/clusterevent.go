// Package clusterevent is the Kubernetes vocabulary of the queue's events:
// the kinds of object the scheduler watches, the fine-grained actions on
// them, the labels kube-scheduler gives their combinations in metrics, and
// kube-scheduler's rule for matching a plugin's registration against a
// cluster event. Kinds and action bits are kube-scheduler v1.37's own
// (k8s.io/kube-scheduler/framework), so an upstream plugin's registration
// converts to a schedq.Event by a type conversion. The queue itself knows none of it: Match is its
// Config.Match, and New builds the schedq.Event values.
package clusterevent

import (
	"strings"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq"
)

// The kinds of object, as kube-scheduler v1.37 names them (they are its
// fwk.EventResource values). Pod is special in a registration: it also
// hears AssignedPod (a pod on a node), UnscheduledPod (another pod not on
// a node) and TargetPod (the queued pod itself) events.
const (
	Pod                   = string(fwk.Pod)
	AssignedPod           = string(fwk.AssignedPod)
	UnscheduledPod        = string(fwk.UnscheduledPod)
	TargetPod             = string(fwk.TargetPod)
	Node                  = string(fwk.Node)
	PersistentVolume      = string(fwk.PersistentVolume)
	PersistentVolumeClaim = string(fwk.PersistentVolumeClaim)
	CSINode               = string(fwk.CSINode)
	CSIDriver             = string(fwk.CSIDriver)
	VolumeAttachment      = string(fwk.VolumeAttachment)
	CSIStorageCapacity    = string(fwk.CSIStorageCapacity)
	StorageClass          = string(fwk.StorageClass)
	ResourceClaim         = string(fwk.ResourceClaim)
	ResourceSlice         = string(fwk.ResourceSlice)
	DeviceClass           = string(fwk.DeviceClass)
	PodGroup              = string(fwk.PodGroup)
	CompositePodGroup     = string(fwk.CompositePodGroup)
	// Service is schedq's own: no v1.37 plugin registers for it.
	Service = "Service"
)

// The action bits, kube-scheduler v1.37's own (fwk.ActionType values), so
// that the numeric comparison of Match agrees with upstream's. Updates are
// split, so that a plugin can ask only for the changes that can help it (a
// node's taints, say, and not its annotations). Update is every update
// bit, All every bit.
const (
	Add                                = schedq.Action(fwk.Add)
	Delete                             = schedq.Action(fwk.Delete)
	UpdateNodeAllocatable              = schedq.Action(fwk.UpdateNodeAllocatable)
	UpdateNodeLabel                    = schedq.Action(fwk.UpdateNodeLabel)
	UpdateNodeTaint                    = schedq.Action(fwk.UpdateNodeTaint)
	UpdateNodeCondition                = schedq.Action(fwk.UpdateNodeCondition)
	UpdateNodeAnnotation               = schedq.Action(fwk.UpdateNodeAnnotation)
	UpdateNodeDeclaredFeature          = schedq.Action(fwk.UpdateNodeDeclaredFeature)
	UpdateNodePreemptionPolicy         = schedq.Action(fwk.UpdateNodePreemptionPolicy)
	UpdatePodLabel                     = schedq.Action(fwk.UpdatePodLabel)
	UpdatePodScaleDown                 = schedq.Action(fwk.UpdatePodScaleDown)
	UpdatePodScaleUp                   = schedq.Action(fwk.UpdatePodScaleUp)
	UpdatePodToleration                = schedq.Action(fwk.UpdatePodToleration)
	UpdatePodSchedulingGatesEliminated = schedq.Action(fwk.UpdatePodSchedulingGatesEliminated)
	UpdatePodGeneratedResourceClaim    = schedq.Action(fwk.UpdatePodGeneratedResourceClaim)

	Update = schedq.Action(fwk.Update)
	All    = schedq.Action(fwk.All)
)

// ActionString names an action set as kube-scheduler does: "Add",
// "Update", "All", a single bit's name; a set kube-scheduler has no name
// for is its bits' names joined by "|", every update bit written as
// "Update" when it holds them all (so "Add|Update", not a list of node and
// pod updates for an object that is neither).
func ActionString(a schedq.Action) string {
	switch a {
	case All, schedq.AnyAction:
		return "All"
	case 0:
		return "None"
	}
	if name := fwk.ActionType(a).String(); name != "" {
		return name
	}
	var b strings.Builder
	write := func(name string) {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString(name)
	}
	allUpdates := a&Update == Update
	for bit := schedq.Action(1); bit <= All; bit <<= 1 {
		switch {
		case a&bit == 0:
		case bit&Update == 0 || !allUpdates:
			write(fwk.ActionType(bit).String())
		case (bit-1)&Update == 0: // the lowest update bit stands for them all
			write("Update")
		}
	}
	return b.String()
}

// New returns the event of kind and action, labelled as kube-scheduler
// labels it in metrics: the kind followed by the action, as in "NodeAdd",
// "AssignedPodDelete" or "NodeUpdateNodeTaint".
func New(kind string, a schedq.Action) schedq.Event {
	return schedq.Event{Kind: kind, Action: a, Label: kind + ActionString(a)}
}

// Common cluster events.
var (
	NodeAdd           = New(Node, Add)
	NodeDelete        = New(Node, Delete)
	AssignedPodAdd    = New(AssignedPod, Add)
	AssignedPodDelete = New(AssignedPod, Delete)
)

// Match is kube-scheduler's rule for whether a plugin's registration reg
// covers the cluster event ev, for schedq.Config.Match: the kinds agree
// (a registration for Pod also takes AssignedPod, UnscheduledPod and
// TargetPod; one for AnyKind takes every kind), the action bits overlap, and ev's action
// is no greater than reg's as a number. The last rule means an incoming
// general Update does not wake a plugin that asked only for one kind of
// update, while a single kind of update wakes a plugin that asked for all.
func Match(reg, ev schedq.Event) bool {
	if reg.Action&ev.Action == 0 || ev.Action > reg.Action {
		return false
	}
	switch {
	case reg.Kind == schedq.AnyKind, reg.Kind == ev.Kind:
		return true
	case reg.Kind == Pod:
		return ev.Kind == AssignedPod || ev.Kind == UnscheduledPod || ev.Kind == TargetPod
	}
	return false
}

// QueueLabels maps the queue's own event labels to kube-scheduler's names
// for them in metrics (scheduler_queue_incoming_pods_total and
// scheduler_inflight_events); the other labels are the same.
var QueueLabels = map[string]string{
	"ItemAdd":    "UnscheduledPodAdd",
	"ItemUpdate": "UnscheduledPodUpdate",
	"ItemPopped": "PodPopped",
}
