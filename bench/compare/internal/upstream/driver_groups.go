package upstream

import (
	"fmt"

	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Pod groups through the Driver (Options.Groups): the group object, its
// members, a pop that may return a group, and the group attempt's failure.

// AddPodGroup creates the gang PodGroup name.
func (d *Driver) AddPodGroup(name string, minCount, priority int32) {
	d.q.AddPodGroup(d.logger, NewPodGroup(name, minCount, priority))
}

// AddMember creates the pending pod name, a member of group.
func (d *Driver) AddMember(name, group string, priority int32) {
	if _, ok := d.pods[name]; ok {
		panic("upstream driver: duplicate pod " + name)
	}
	pod := NewMember(name, group, priority, nil)
	d.pods[name] = pod
	d.q.Add(d.ctx, pod)
}

// popGroup records a popped group: its members are in flight, and the
// group's attempt waits for FailGroup.
func (d *Driver) popGroup(g *framework.QueuedPodGroupInfo) string {
	p := Popped{Group: g, Cycle: d.q.SchedulingCycle()}
	for _, pi := range p.Members() {
		d.inflight[pi.Pod.Name] = &inflight{info: pi, cycle: p.Cycle}
	}
	d.groups[g.Name] = p
	return "group:" + g.Name
}

// FailGroup ends group's attempt as failed: with an error (no plugins) or
// rejected by plugins. As the scheduler does for a lone pod, a member
// deleted during the attempt is not requeued; the others go back through
// Reject's path.
func (d *Driver) FailGroup(group string, plugins []string) error {
	p, ok := d.groups[group]
	if !ok {
		return fmt.Errorf("group %s is not in flight", group)
	}
	delete(d.groups, group)
	var live []*framework.QueuedPodInfo
	for _, pi := range p.Members() {
		delete(d.inflight, pi.Pod.Name)
		if _, exists := d.pods[pi.Pod.Name]; !exists {
			d.q.Done(pi.Pod.UID)
			continue
		}
		live = append(live, pi)
	}
	return rejectMembers(d.q, d.logger, p, live, plugins)
}

// DoneGroup ends group's attempt as a success: every member was placed.
func (d *Driver) DoneGroup(group string) error {
	p, ok := d.groups[group]
	if !ok {
		return fmt.Errorf("group %s is not in flight", group)
	}
	delete(d.groups, group)
	for _, pi := range p.Members() {
		delete(d.inflight, pi.Pod.Name)
		delete(d.pods, pi.Pod.Name)
	}
	return Succeed(d.q, d.logger, p)
}
