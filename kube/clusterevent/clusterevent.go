// Package clusterevent is the Kubernetes vocabulary of the queue's events:
// the kinds of object the scheduler watches, the fine-grained actions on
// them, the labels kube-scheduler gives their combinations in metrics, and
// kube-scheduler's rule for matching a plugin's registration against a
// cluster event. The queue itself knows none of it: Match is its
// Config.Match, and New builds the schedq.Event values.
package clusterevent

import (
	"strings"

	"github.com/schedq/schedq"
)

// The kinds of object, as kube-scheduler names them. Pod is special in a
// registration: it also hears AssignedPod and UnschedulablePod events.
const (
	Pod                   = "Pod"
	AssignedPod           = "AssignedPod"
	UnschedulablePod      = "UnschedulablePod"
	Node                  = "Node"
	PersistentVolume      = "PersistentVolume"
	PersistentVolumeClaim = "PersistentVolumeClaim"
	StorageClass          = "StorageClass"
	CSINode               = "CSINode"
	Service               = "Service"
	PodGroup              = "PodGroup"
)

// The action bits. Updates are split, so that a plugin can ask only for
// the changes that can help it (a node's taints, say, and not its
// annotations). Update is every update bit, All every bit.
const (
	Add schedq.Action = 1 << iota
	Delete
	UpdateNodeAllocatable
	UpdateNodeLabel
	UpdateNodeTaint
	UpdateNodeCondition
	UpdateNodeAnnotation
	UpdatePodLabel
	UpdatePodScaleDown
	UpdatePodToleration
	UpdatePodSchedulingGatesEliminated
	UpdatePodGeneratedResourceClaim
	lastAction

	Update = UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdateNodeCondition |
		UpdateNodeAnnotation | UpdatePodLabel | UpdatePodScaleDown | UpdatePodToleration |
		UpdatePodSchedulingGatesEliminated | UpdatePodGeneratedResourceClaim
	All = lastAction - 1
)

var actionNames = [...]string{
	"Add", "Delete", "UpdateNodeAllocatable", "UpdateNodeLabel", "UpdateNodeTaint",
	"UpdateNodeCondition", "UpdateNodeAnnotation", "UpdatePodLabel", "UpdatePodScaleDown",
	"UpdatePodToleration", "UpdatePodSchedulingGatesEliminated", "UpdatePodGeneratedResourceClaim",
}

// ActionString names an action set: "Add", "Update", "All", a single bit's
// name, or bit names joined by "|".
func ActionString(a schedq.Action) string {
	switch a {
	case All, schedq.AnyAction:
		return "All"
	case Update:
		return "Update"
	case 0:
		return "None"
	}
	var b strings.Builder
	for i, name := range actionNames {
		if a&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
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
// (a registration for Pod also takes AssignedPod and UnschedulablePod; one
// for AnyKind takes every kind), the action bits overlap, and ev's action
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
		return ev.Kind == AssignedPod || ev.Kind == UnschedulablePod
	}
	return false
}

// QueueLabels maps the queue's own event labels to kube-scheduler's names
// for them in metrics (scheduler_queue_incoming_pods_total and
// scheduler_inflight_events); the other labels are the same.
var QueueLabels = map[string]string{
	"ItemAdd":    "UnschedulablePodAdd",
	"ItemUpdate": "UnschedulablePodUpdate",
	"ItemPopped": "PodPopped",
}
