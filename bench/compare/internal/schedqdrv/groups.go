package schedqdrv

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/bench/compare/internal/upstream"
)

// Pod groups, as upstream.Driver has them under Options.Groups.

// podGroup names the PodGroup pod p belongs to, or "".
func podGroup(p *v1.Pod) string {
	if g := p.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName
	}
	return ""
}

// AddPodGroup creates the gang PodGroup name.
func (d *Driver) AddPodGroup(name string, minCount, priority int32) {
	if err := d.c.SetGroup(name, schedq.GroupSpec{MinCount: int(minCount), Priority: priority}, d.now); err != nil {
		panic(err)
	}
}

// AddMember creates the pending pod name, a member of group.
func (d *Driver) AddMember(name, group string, priority int32) {
	if _, ok := d.pods[name]; ok {
		panic("schedq driver: duplicate pod " + name)
	}
	p := upstream.NewMember(name, group, priority, nil)
	d.pods[name] = p
	d.c.Add(p, d.now)
}

// FailGroup ends group's attempt as failed: with an error (no plugins) or
// rejected by plugins.
func (d *Driver) FailGroup(group string, plugins []string) error {
	a, err := d.endGroup(group)
	if err != nil {
		return err
	}
	return d.c.Requeue(a, schedq.Failure{RejectedBy: plugins}, d.now)
}

// DoneGroup ends group's attempt as a success: every member was placed.
func (d *Driver) DoneGroup(group string) error {
	a, err := d.endGroup(group)
	if err != nil {
		return err
	}
	for _, m := range a.Members {
		delete(d.pods, m.Key.Name)
	}
	return d.c.Done(a, d.now)
}

// endGroup takes group's attempt out of the driver's books: the group and
// its members are no longer in flight.
func (d *Driver) endGroup(group string) (schedq.Attempt[types.NamespacedName, *v1.Pod], error) {
	a, ok := d.groups[group]
	if !ok {
		return a, fmt.Errorf("group %s is not in flight", group)
	}
	delete(d.groups, group)
	for _, m := range a.Members {
		delete(d.inflight, m.Key.Name)
	}
	return a, nil
}
