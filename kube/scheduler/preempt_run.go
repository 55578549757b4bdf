package scheduler

import (
	"context"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq/kube/framework"
)

// preemption is what a cycle decided about preemption, carried in its
// Outcome from the cache's lock to act: the chosen candidate, or, with
// none, whether the pod's nomination is to be cleared.
type preemption struct {
	cand  Candidate
	found bool
}

// planPreemption looks for victims whose eviction lets pi fit, after
// every node rejected it, and records the choice in out. The cycle's
// message gains the reason when there is none. It reads snap only.
func (s *Scheduler) planPreemption(ctx context.Context, pi *framework.PodInfo, snap framework.Snapshot, out *Outcome) {
	s.pre.o.Metrics.attempt()
	if why, ok := s.eligible(pi.Pod, snap); !ok {
		out.Message += " preemption: " + why
		out.Reasons = append(out.Reasons, "preemption: "+why)
		return
	}
	out.preempt = &preemption{}
	nodes := snap.Nodes()
	if len(nodes) == 0 {
		return
	}
	state, filters, st := s.preFilter(ctx, pi, snap)
	if !st.IsSuccess() {
		out.Message += " preemption: not helpful: " + st.Plugin + ": " + st.Message()
		out.Reasons = append(out.Reasons, "preemption: not helpful: "+st.Plugin)
		return
	}
	x := &s.srch
	x.pod, x.prio, x.filters, x.state, x.nominated = pi, framework.Priority(pi.Pod), filters, state, s.nomPods
	x.reasons = map[string]int{}
	x.exts = x.exts[:0]
	for _, pf := range s.o.Profile.PreFilter {
		if e, ok := pf.(framework.PreFilterExtensions); ok && ranFilter(filters, pf.Name()) {
			x.exts = append(x.exts, e)
		}
	}
	x.leaving = s.pre.leaving()
	x.budgets = newBudgets(nil)
	if b := s.pre.o.Budgets; b != nil {
		x.budgets = newBudgets(b())
	}
	want := candidatesToFind(len(nodes), s.pre.o.MinCandidateNodesPercentage, s.pre.o.MinCandidateNodesAbsolute)
	cands := x.run(ctx, nodes, s.o.Rand.IntN(len(nodes)), want)
	x.state, x.nominated, x.leaving = nil, nil, nil // pin nothing between cycles
	if len(cands) == 0 {
		out.Message += " " + x.message(len(nodes))
		for _, r := range slices.Sorted(maps.Keys(x.reasons)) {
			out.Reasons = append(out.Reasons, "preemption: "+r)
		}
		return
	}
	c := pickCandidate(cands)
	out.preempt.cand, out.preempt.found = c, true
	out.Nominated, out.Victims = c.Node, c.Victims
}

// eligible says whether pod may preempt now, and if not why: its policy
// forbids it, its last preemption is still being carried out, or a pod of
// lower priority on its nominated node is still terminating or being
// evicted (the cache has not shown it terminating yet).
func (s *Scheduler) eligible(pod *v1.Pod, snap framework.Snapshot) (string, bool) {
	if p := pod.Spec.PreemptionPolicy; p != nil && *p == v1.PreemptNever {
		return "not eligible due to preemptionPolicy=Never.", false
	}
	if s.pre.isRunning(pod.UID) {
		return "not eligible: its victims are still being evicted.", false
	}
	if !s.hasNom {
		return "", true
	}
	node := s.ownNom
	ni, ok := snap.Node(node)
	if !ok {
		return "", true
	}
	prio := framework.Priority(pod)
	leaving := s.pre.leaving()
	for _, p := range ni.Pods {
		if framework.Priority(p.Pod) >= prio {
			continue
		}
		if p.Pod.DeletionTimestamp != nil {
			s.pre.seen(p.Pod.UID)
			return "not eligible: a pod on its nominated node " + node + " is still terminating.", false
		}
		if _, ok := leaving[p.Pod.UID]; ok {
			return "not eligible: a pod on its nominated node " + node + " is being evicted.", false
		}
	}
	return "", true
}

// act carries out what planPreemption (or fwPreempt) decided, outside
// the cache's lock and the queue's: it nominates the pod to the chosen
// node, takes the nomination from the pods of lower priority nominated
// there, and hands both, with the victims, to the Evictor, which writes
// the nominations to the pods' status and deletes the victims without
// holding the cycle (with no victim, it only writes the nominations: the
// room is being freed already). Without a candidate, the pod's
// nomination is cleared.
func (s *Scheduler) act(ctx context.Context, info Attempt, out *Outcome) {
	p := out.preempt
	if p == nil || s.pre == nil {
		return
	}
	nom, pod := s.queue, info.Item
	if !p.found {
		if _, ok := nom.Nomination(info.Key); ok {
			s.clearNomination(info.Key, "preemption cannot help")
		}
		return
	}
	c := p.cand
	if err := nom.Nominate(info.Key, c.Node); err != nil {
		s.o.Logger.Debug("nominate", "pod", info.Key, "err", err)
		return
	}
	prio := framework.Priority(pod)
	var unnominated []*v1.Pod
	for _, other := range nom.Nominated(c.Node) {
		if framework.Priority(other) < prio && s.clearNomination(framework.Key(other), "a higher-priority pod took its room") {
			unnominated = append(unnominated, other)
		}
	}
	s.pre.o.Metrics.victims(len(c.Victims))
	s.o.Logger.Debug("preempting", "pod", info.Key, "node", c.Node, "victims", len(c.Victims), "pdbViolations", c.PDBViolations)
	uid, key := pod.UID, info.Key
	s.pre.setRunning(uid, true)
	s.pre.evict(c.Victims, s.o.Now())
	s.pre.o.Evictor.Preempt(ctx, Preemption{Preemptor: pod, Node: c.Node, Victims: c.Victims, Unnominated: unnominated}, func(errs []error) {
		s.pre.setRunning(uid, false)
		if len(errs) > 0 {
			// Some room may not come: look again from scratch next time,
			// and count none of these victims as leaving.
			s.pre.forget(c.Victims)
			s.o.Logger.Warn("preemption incomplete", "pod", key, "node", c.Node, "errors", errs)
			s.clearNomination(key, "a victim could not be evicted")
		}
	})
}

// ranFilter reports whether the filter named name is among filters: its
// PreFilter did not skip it.
func ranFilter(filters []framework.FilterPlugin, name string) bool {
	for _, f := range filters {
		if f.Name() == name {
			return true
		}
	}
	return false
}
