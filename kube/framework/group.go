package framework

import (
	v1 "k8s.io/api/core/v1"
)

// GroupName is the name of the pod group a pod belongs to, as the queue
// knows groups: "namespace/name" of the PodGroup its
// spec.schedulingGroup.podGroupName names, in the pod's own namespace
// (the API allows no other). "" for a pod outside any group. O(1), no
// allocation for a lone pod.
func GroupName(p *v1.Pod) string {
	sg := p.Spec.SchedulingGroup
	if sg == nil || sg.PodGroupName == nil || *sg.PodGroupName == "" {
		return ""
	}
	return p.Namespace + "/" + *sg.PodGroupName
}

// Quorum is what a group plugin says of a group attempt so far.
type Quorum int

// The verdicts of a GroupPlugin.
const (
	// QuorumMet: enough members are placed; the placed ones may be bound.
	QuorumMet Quorum = iota
	// QuorumWait: not enough yet, but the members left to try could make it.
	QuorumWait
	// QuorumLost: even if every member left fits, too few would be placed.
	QuorumLost
)

// GroupPlugin decides the all-or-nothing rule of a group attempt: the
// scheduler asks it before each member and at the end. scheduled counts
// the members already bound or assumed before this attempt plus those
// placed in it, placedNow only the latter, remaining the members not yet
// tried. It must be pure and O(1).
type GroupPlugin interface {
	Plugin
	Quorum(scheduled, placedNow, remaining, minCount int) Quorum
}
