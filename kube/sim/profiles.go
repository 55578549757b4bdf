package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// Several profiles: the simulator runs every profile of scheduler.config
// as schedq scheduler does (scheduler.Options.Profiles), its frameworks
// built in the same place (scheduler.NewProfiles). With one profile the
// pods are named SchedulerName, as they always were, and the one
// framework schedules them whatever the profile's name; with several,
// each pod carries its profile's schedulerName (a scenario's pod group
// its schedulerName, the first profile's by default), and the pods of
// each are scheduled by their profile's framework.

// setProfiles notes the names of profs, the profiles the run builds: the
// names the scenario's pods take and the snapshot's pending pods are
// placed under (profileOf). O(profiles).
func (s *sim) setProfiles(profs []*config.KubeSchedulerProfile) {
	s.takenOver = takenOverBy(profs[0].SchedulerName)
	if len(profs) == 1 {
		return
	}
	s.names = make([]string, len(profs))
	for i, p := range profs {
		s.names[i] = p.SchedulerName
	}
	s.cl.profiles = s.names
}

// profileOf returns the schedulerName under which the simulated
// scheduler places a pending pod (of a snapshot, or a forecast's) whose
// spec.schedulerName is name, and false if no profile would take it.
// With one profile: SchedulerName, for the names the profile takes over
// (takenOverBy). With several: name itself if it is a profile's, else
// the first profile that takes it over (the pods without a name go to
// the default scheduler's profile, if there is one, and SchedulerName's,
// the simulator's own pods, to the first). O(profiles).
func (s *sim) profileOf(name string) (string, bool) {
	if s.names == nil {
		return schedulerName, slices.Contains(s.takenOver, name)
	}
	if slices.Contains(s.names, name) {
		return name, true
	}
	for _, n := range s.names {
		if slices.Contains(takenOverBy(n), name) {
			return n, true
		}
	}
	return "", false
}

// schedulerOf is the schedulerName of g's pods (nil: a trace's):
// SchedulerName with one profile, else g's schedulerName, the first
// profile's if it names none. O(1).
func (c *cluster) schedulerOf(g *PodGroup) string {
	switch {
	case c.profiles == nil:
		return schedulerName
	case g != nil && g.SchedulerName != "":
		return g.SchedulerName
	}
	return c.profiles[0]
}

// ownPod returns p under the name of the profile that places it
// (profileOf), a shallow copy if the name changes: a forecast's pods are
// the live state's, changed in no place. With one profile, or a name no
// profile takes, p itself. O(profiles).
func (s *sim) ownPod(p *v1.Pod) *v1.Pod {
	if s.names == nil {
		return p
	}
	name, ok := s.profileOf(p.Spec.SchedulerName)
	if !ok || name == p.Spec.SchedulerName {
		return p
	}
	c := *p
	c.Spec.SchedulerName = name
	return &c
}

// validateSchedulerNames refuses a pod group's schedulerName that is not
// the name of one of the profiles the run builds (loadProfiles). The
// file is read only if a group names a profile; one that does not load
// is checkGPUConfig's to report. O(pod groups × profiles).
func (s *Scenario) validateSchedulerNames(bad func(string, string, ...any)) {
	if !slices.ContainsFunc(s.Pods, func(g PodGroup) bool { return g.SchedulerName != "" }) {
		return
	}
	profs, err := s.Scheduler.loadProfiles()
	if err != nil {
		return
	}
	names := make([]string, len(profs))
	for i, p := range profs {
		names[i] = strconv.Quote(p.SchedulerName)
	}
	where := cmpOr(s.Scheduler.Config, "kube-scheduler's default configuration")
	for i, g := range s.Pods {
		if g.SchedulerName != "" && !slices.Contains(names, strconv.Quote(g.SchedulerName)) {
			bad(fmt.Sprintf("pods[%d].schedulerName", i), "%q names no profile of %s (its profiles: %s)", g.SchedulerName, where, strings.Join(names, ", "))
		}
	}
}

// ProfileCount counts the pods of one profile: those scheduled, those
// still pending at the end, and all that arrived.
type ProfileCount struct {
	Profile   string `json:"profile"`
	Scheduled int    `json:"scheduled"`
	Pending   int    `json:"pending"`
	Pods      int    `json:"pods"`
}

// profileCounts counts the pods of each profile, in the file's order;
// nil with one profile. A pod deleted before it was bound is neither
// scheduled nor pending, as in the report's totals. O(pods).
func (s *sim) profileCounts() []ProfileCount {
	if s.names == nil {
		return nil
	}
	out := make([]ProfileCount, len(s.names))
	at := make(map[string]int, len(s.names))
	for i, n := range s.names {
		out[i].Profile, at[n] = n, i
	}
	for _, st := range s.order {
		i, ok := at[st.profile]
		if !ok {
			continue
		}
		c := &out[i]
		c.Pods++
		switch _, alive := s.cl.pods[st.key]; {
		case !st.bound.IsZero():
			c.Scheduled++
		case alive:
			c.Pending++
		}
	}
	return out
}

// ProfileNames returns the schedulerNames of the profiles a run of s
// builds, in the order of scheduler.config (kube-scheduler's default
// profile's without one). A what-if of a scenario of several profiles
// takes them as its WhatIfInput.Profiles. It reads the file.
func (s *Scenario) ProfileNames() ([]string, error) {
	profs, err := s.Scheduler.loadProfiles()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(profs))
	for i, p := range profs {
		names[i] = p.SchedulerName
	}
	return names, nil
}
