package schedq

import "strings"

// Resource names the kind of object a cluster event is about. The queue
// compares resources as strings; the constants below are the ones
// kube-scheduler uses, and callers may define their own.
type Resource string

// Resources known to the Kubernetes adapter. Pod is special: a registration
// for Pod also matches events on AssignedPod and UnschedulablePod.
const (
	WildcardResource      Resource = "*"
	Pod                   Resource = "Pod"
	AssignedPod           Resource = "AssignedPod"
	UnschedulablePod      Resource = "UnschedulablePod"
	Node                  Resource = "Node"
	PersistentVolume      Resource = "PersistentVolume"
	PersistentVolumeClaim Resource = "PersistentVolumeClaim"
	StorageClass          Resource = "StorageClass"
	CSINode               Resource = "CSINode"
	Service               Resource = "Service"
)

// ActionType is a set of actions, as bits. Updates are split into
// fine-grained bits so that a plugin can ask only for the changes that can
// help it (a node's taints, say, and not its annotations).
type ActionType uint64

// The action bits. Update is the union of all update bits, All of every bit.
const (
	Add ActionType = 1 << iota
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

// String names the action: "Add", "Update", "All", a single bit's name, or
// bit names joined by "|".
func (a ActionType) String() string {
	switch a {
	case All:
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

// Event is a change in the world that may make parked items schedulable:
// a cluster event, or one of the queue's own (see the Event* labels).
type Event struct {
	Resource Resource
	Action   ActionType
	// Label names the event in metrics and explanations. When empty,
	// Label() derives it from Resource and Action, as in "NodeAdd".
	CustomLabel string
}

// Labels of the queue's own events, as they appear in the incoming metric.
const (
	LabelUnschedulablePodAdd    = "UnschedulablePodAdd"
	LabelUnschedulablePodUpdate = "UnschedulablePodUpdate"
	LabelScheduleAttemptFailure = "ScheduleAttemptFailure"
	LabelBackoffComplete        = "BackoffComplete"
	LabelPopFromBackoffQ        = "PopFromBackoffQ"
	LabelForceActivate          = "ForceActivate"
	LabelUnschedulableTimeout   = "UnschedulableTimeout"
	// LabelPodPopped counts attempts in flight in the in-flight events gauge.
	LabelPodPopped = "PodPopped"
)

// The queue's wildcard events: they match every registration and every
// parked item is worth trying again after them.
var (
	EventUnschedulableTimeout = Event{Resource: WildcardResource, Action: All, CustomLabel: LabelUnschedulableTimeout}
	EventForceActivate        = Event{Resource: WildcardResource, Action: All, CustomLabel: LabelForceActivate}
)

// Common cluster events.
var (
	EventNodeAdd           = Event{Resource: Node, Action: Add}
	EventAssignedPodAdd    = Event{Resource: AssignedPod, Action: Add}
	EventAssignedPodDelete = Event{Resource: AssignedPod, Action: Delete}
)

// Label returns CustomLabel if set, else Resource followed by Action, as
// in "NodeAdd", "AssignedPodDelete" or "NodeUpdateNodeTaint".
func (e Event) Label() string {
	if e.CustomLabel != "" {
		return e.CustomLabel
	}
	return string(e.Resource) + e.Action.String()
}

// IsWildcard reports whether e is a wildcard event: any resource, all actions.
func (e Event) IsWildcard() bool { return e.Resource == WildcardResource && e.Action == All }

// Matches reports whether the registration reg covers the incoming event e:
// reg is a wildcard, or the resources agree (reg "*" takes any; reg Pod takes
// AssignedPod and UnschedulablePod), the action bits overlap, and e's action
// is no greater than reg's as a number. The last rule is kube-scheduler's:
// an incoming general Update does not wake a plugin that asked only for one
// kind of update, while a single kind of update wakes a plugin that asked
// for all of them. An incoming wildcard matches only a wildcard.
func (reg Event) Matches(e Event) bool {
	if reg.IsWildcard() {
		return true
	}
	if reg.Action&e.Action == 0 || e.Action > reg.Action {
		return false
	}
	switch {
	case reg.Resource == WildcardResource, reg.Resource == e.Resource:
		return true
	case reg.Resource == Pod:
		return e.Resource == AssignedPod || e.Resource == UnschedulablePod
	}
	return false
}
