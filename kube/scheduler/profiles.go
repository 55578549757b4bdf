package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq/kube/profile"
)

// Several profiles (Options.Profiles), as kube-scheduler runs every
// profile of its configuration: one queue, one cache and one snapshot for
// all, one framework per profile, and each pod scheduled by the framework
// its spec.schedulerName names. What the scheduling loop keeps between
// cycles for a framework (its filter plugins, the filter memo, its
// DefaultPreemption's adapter) is kept per profile; the batch of the last
// cycle (fwbatch.go) ends when the next cycle's pod is another profile's.

// fwProfile is one profile as the scheduling loop keeps it. Only the
// scheduling loop uses it.
type fwProfile struct {
	// name is the profile's schedulerName, the profile label of its
	// metrics; "" for the one profile of Options.Profiles, whose label is
	// the Metrics'.
	name        string
	fw          *profile.Framework
	filterNames []string      // fw's filter plugins (filterPlugins)
	pre         *fwPreemption // fw's DefaultPreemption adapted (fwpreempt.go); nil without
	fmemo       filterMemo    // filter verdicts of this profile's pods (fwfiltermemo.go)
}

// setProfiles builds s's profiles from o.Profiles: one schedules every
// pod; several must share one snapshot. O(profiles).
func (s *Scheduler) setProfiles(o Options) error {
	switch {
	case len(o.Profiles) == 0:
		return errors.New("scheduler: Options.Profiles is required: build kube-scheduler's framework with profile.NewFrameworkOn (or NewProfiles)")
	case slices.Contains(o.Profiles, nil):
		return errors.New("scheduler: Options.Profiles: a nil framework")
	case len(o.Profiles) == 1:
		s.only = &fwProfile{fw: o.Profiles[0]}
		s.profs = []*fwProfile{s.only}
		s.cur = s.only
		return nil
	}
	s.byName = make(map[string]*fwProfile, len(o.Profiles))
	for _, fw := range o.Profiles {
		name := fw.Name()
		if s.byName[name] != nil {
			return fmt.Errorf("scheduler: Options.Profiles: two profiles named %q", name)
		}
		if fw.Snapshot() != o.Profiles[0].Snapshot() {
			return fmt.Errorf("scheduler: Options.Profiles: profile %q has a snapshot of its own; every profile must be built on one (profile.Setup.Alongside)", name)
		}
		p := &fwProfile{name: name, fw: fw}
		s.byName[name] = p
		s.profs = append(s.profs, p)
	}
	slices.SortFunc(s.profs, func(a, b *fwProfile) int { return strings.Compare(a.name, b.name) })
	s.cur = s.profs[0]
	return nil
}

// profileFor returns the profile that schedules pod: the one profile's
// for any pod, else the one its spec.schedulerName names, nil if none
// does. O(1).
func (s *Scheduler) profileFor(pod *v1.Pod) *fwProfile {
	if s.only != nil {
		return s.only
	}
	return s.byName[pod.Spec.SchedulerName]
}

// label is the profile label of pod's metrics: "" (the Metrics' own) with
// one profile, else pod's schedulerName. A function of the pod
// alone, so that a binding's goroutine may call it. O(1).
func (s *Scheduler) label(pod *v1.Pod) string {
	if s.only != nil {
		return ""
	}
	return pod.Spec.SchedulerName
}

// use makes p the cycle's profile. The batch of the cycle before, another
// profile's, ends: its scores are another framework's. O(1).
func (s *Scheduler) use(p *fwProfile) {
	if p != s.cur {
		s.batch.drop()
		s.cur = p
	}
}

// errNoProfile is the error of a pod that names no profile: the handlers
// let in only pods of the profiles, so it means a bug.
func errNoProfile(pod *v1.Pod) string {
	return fmt.Sprintf("no profile for scheduler name %q", pod.Spec.SchedulerName)
}

// groupProfile returns the profile that schedules a group attempt: the
// one its members name, which must be one, as kube-scheduler requires of
// a pod group; else the error message. O(members).
func (s *Scheduler) groupProfile(a Attempt) (*fwProfile, string) {
	if len(a.Members) == 0 {
		return s.cur, ""
	}
	first := a.Members[0].Item
	for _, m := range a.Members[1:] {
		if s.only == nil && m.Item.Spec.SchedulerName != first.Spec.SchedulerName {
			return nil, fmt.Sprintf("all pods of pod group %s must have the same spec.schedulerName: %q and %q", a.Group, first.Spec.SchedulerName, m.Item.Spec.SchedulerName)
		}
	}
	p := s.profileFor(first)
	if p == nil {
		return nil, errNoProfile(first)
	}
	return p, ""
}

// groupLabel is the profile label of a group attempt's metrics: its
// first member's (see label). O(1).
func (s *Scheduler) groupLabel(a Attempt) string {
	if len(a.Members) == 0 {
		return ""
	}
	return s.label(a.Members[0].Item)
}

// ours reports whether p names one of h's profiles (Handlers.Profiles),
// or, without them, SchedulerName. O(profiles).
func (h *Handlers) ours(p *v1.Pod) bool {
	if len(h.Profiles) == 0 {
		return p.Spec.SchedulerName == h.SchedulerName
	}
	return slices.Contains(h.Profiles, p.Spec.SchedulerName)
}

// Frameworks returns o's frameworks, o.Profiles. O(1).
func (o Options) Frameworks() []*profile.Framework { return o.Profiles }
