package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	fwpreemption "k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// Preemption on the framework path: an Unschedulable lone pod runs the
// profile's PostFilter plugins (kube-scheduler's DefaultPreemption) with
// the cycle's node statuses. DefaultPreemption finds the candidates and
// the victims; schedq adapts it (fwPreemption) so that:
//
//   - its executor only collects the victims (Executor.PreemptPod); act
//     then nominates the pod in the queue, clears the nominations of the
//     lower-priority pods there, and hands the victims to the Evictor.
//     The executor is synchronous
//     (profile.Framework.Preemption builds it with asynchronous
//     preemption off): the cycle, not a goroutine of the plugin, decides;
//   - it reads the preemptor as the queue knows it (its nomination in
//     status.nominatedNodeName) and the budgets of PreemptionOptions;
//   - terminating pods and victims being evicted are never victims,
//     their room counts as free (a node where that is enough is taken
//     at once, with no victim), and a pod whose victims are still being
//     evicted does not preempt again;
//   - the pick is deterministic: the dry run visits the nodes in the
//     snapshot's order (orderedStatus), from an offset drawn from
//     Options.Rand, victims of one priority are ordered by start
//     time (creation if not started), never the wall clock, and ties
//     between candidates go to the first found (pickCandidate);
//   - a plugin's panic during the dry run (which runs on the framework's
//     parallelizer goroutine, out of the cycle's recovery, where it
//     would end the process) fails that node, with the panic in the
//     pod's message; a plugin state's Clone, which the dry run calls
//     there too, before SelectVictimsOnNode, is called once on the
//     cycle's goroutine first, so that one that panics fails the pod.

// fwPreemption is the scheduler's hold on DefaultPreemption. The fields
// below mu are written by the executor on the framework's parallelizer
// goroutine (one worker, while the cycle waits); the others by the
// scheduling loop, before RunPostFilterPlugins.
type fwPreemption struct {
	s  *Scheduler
	fw *profile.Framework // the profile whose plugin pl is
	pl *defaultpreemption.DefaultPreemption
	// runs says that fw runs pl at PostFilter: a profile may build it
	// (for its PreEnqueue) with its PostFilter disabled.
	runs bool

	pod     *v1.Pod                 // the preemptor, as the queue knows it
	leaving map[types.UID]time.Time // victims being evicted, read per cycle
	order   []string                // candidates in the order the dry run found them

	own pluginHooks // the plugin's hooks as found, restored by Release

	mu         sync.Mutex
	node       string
	victims    []*v1.Pod
	violations int
	free       string // the first node where leaving pods make room enough
}

// usePreemption adapts pl, the framework's DefaultPreemption, to the
// scheduler (see above). Called by EnablePreemption. The plugin serves
// the last scheduler adapted to it, as the framework's nominator serves
// the last one New built on it: one scheduler runs on a framework at a
// time (a leader's terms follow each other), and Release gives the
// plugin its own hooks back when a term ends.
func (s *Scheduler) usePreemption(fw *profile.Framework, pl *defaultpreemption.DefaultPreemption) *fwPreemption {
	f := &fwPreemption{s: s, fw: fw, pl: pl, own: hooksOf(pl), runs: runsAtPostFilter(fw, pl.Name())}
	pl.Executor.PreemptPod = f.collect
	pl.Evaluator.PodLister = cyclePodLister{f}
	pl.Evaluator.PdbLister = budgetLister{s.pre.o.Budgets}
	pl.Evaluator.Interface = &fwPreemptRules{pl, f}
	pl.IsEligiblePod = f.eligibleVictim
	pl.MoreImportantVictim = moreImportantVictim
	return f
}

// runsAtPostFilter reports whether fw runs the plugin name at PostFilter.
// O(plugins).
func runsAtPostFilter(fw *profile.Framework, name string) bool {
	p := fw.Framework().ListPlugins()
	return p != nil && slices.ContainsFunc(p.PostFilter.Enabled, func(pl config.Plugin) bool { return pl.Name == name })
}

// pluginHooks are the parts of DefaultPreemption that usePreemption
// replaces.
type pluginHooks struct {
	preemptPod    func(context.Context, fwpreemption.Candidate, fwpreemption.ExecutorPreemptor, *v1.Pod, string) (bool, error)
	podLister     corelisters.PodLister
	pdbLister     policylisters.PodDisruptionBudgetLister
	rules         fwpreemption.Interface
	eligible      defaultpreemption.IsEligiblePodFunc
	moreImportant defaultpreemption.MoreImportantVictimFunc
}

// hooksOf returns pl's hooks as they are.
func hooksOf(pl *defaultpreemption.DefaultPreemption) pluginHooks {
	return pluginHooks{pl.Executor.PreemptPod, pl.Evaluator.PodLister, pl.Evaluator.PdbLister,
		pl.Evaluator.Interface, pl.IsEligiblePod, pl.MoreImportantVictim}
}

// restore gives pl back the hooks h holds.
func (h pluginHooks) restore(pl *defaultpreemption.DefaultPreemption) {
	pl.Executor.PreemptPod, pl.Evaluator.PodLister, pl.Evaluator.PdbLister = h.preemptPod, h.podLister, h.pdbLister
	pl.Evaluator.Interface, pl.IsEligiblePod, pl.MoreImportantVictim = h.rules, h.eligible, h.moreImportant
}

// fwPreempt runs the PostFilter plugins for a pod that fits nowhere, if
// preemption is on, and records what they decided in out for act: the
// nominated node and its victims, or that the pod's nomination is to be
// cleared (preemption cannot help). A PostFilter error, or a pod that may
// not preempt now, leaves the nomination as it is; a profile with no
// PostFilter plugin to run ends it (endNomination). The plugins' message
// is added to out's, as kube-scheduler adds it to its FitError.
func (s *Scheduler) fwPreempt(ctx context.Context, cs fwk.CycleState, info Attempt, out *Outcome) {
	fw := s.cur.fw.Framework()
	if out.Result != Unschedulable || out.fwStatus == nil {
		return
	}
	if !fw.HasPostFilterPlugins() || s.pre == nil && !s.cur.fw.HasPostFilterWithoutPreemption() {
		// As kube-scheduler v1.37.2 clears the nomination of a pod that
		// fits nowhere when its profile has no PostFilter plugin (without
		// preemption, DefaultPreemption does not count).
		s.endNomination(info.Item, "no PostFilter plugin")
		return
	}
	if s.pre == nil {
		s.fwPostFilter(ctx, cs, info, out)
		return
	}
	f := s.cur.pre
	if f != nil && f.runs {
		// As upstream's DefaultPreemption counts its PostFilter's runs: a
		// profile that does not run it there attempts no preemption.
		s.pre.o.Metrics.attempt()
	}
	if f != nil {
		f.begin(info.Item)
		defer f.end()
		// The dry run clones cs for each node on the parallelizer's
		// goroutines, where a plugin state's Clone that panics would end
		// the process: clone it once here first, where the cycle's
		// recovery fails this pod only.
		cs.Clone()
	}
	res, st := fw.RunPostFilterPlugins(ctx, cs, info.Item, orderedStatus{out.fwStatus})
	if f != nil && f.free != "" {
		// Pods leaving a node make room enough: nominated there, nobody
		// is evicted, whatever DefaultPreemption chose elsewhere.
		out.Message += " preemption: pods leaving node " + f.free + " make room."
		out.preempt = &preemption{cand: Candidate{Node: f.free}, found: true}
		out.Nominated, out.Victims = f.free, nil
		return
	}
	if msg := st.Message(); msg != "" {
		out.Message += " " + msg
		if !st.IsSuccess() {
			out.Reasons = append(out.Reasons, msg)
		}
	}
	if st.Code() == fwk.Error {
		s.o.Logger.Warn("PostFilter", "pod", info.Key, "err", st.AsError())
		return
	}
	if res == nil || res.NominatingInfo == nil || res.NominatingInfo.Mode() != fwk.ModeOverride {
		return
	}
	out.preempt = &preemption{}
	node := res.NominatingInfo.NominatedNodeName
	if node == "" {
		return
	}
	c := Candidate{Node: node}
	if f != nil && f.node == node {
		c.Victims, c.PDBViolations = f.victims, f.violations
	}
	out.preempt.cand, out.preempt.found = c, true
	out.Nominated, out.Victims = c.Node, c.Victims
}

// fwPostFilter runs, without preemption, the profile's other PostFilter
// plugins for a pod that fits nowhere, as kube-scheduler does with
// DefaultPreemption disabled: DynamicResources' deallocates a claim of
// the pod allocated where the pod no longer fits (a binding that failed
// after PreBind leaves it so), or the pod would wait for ever. Their
// message is added to out's; a nomination they return is ignored. An
// error is logged only: DynamicResources' PostFilter fails ("not
// found") for every pod whose cycle ended before its PreFilter ran,
// which says nothing of the pod. Group members, which never preempt,
// run it too, but only once their attempt has failed (fwGroupPostFilter),
// as kube-scheduler runs its PodGroupPostFilter after a failed cycle.
func (s *Scheduler) fwPostFilter(ctx context.Context, cs fwk.CycleState, info Attempt, out *Outcome) {
	if out.Result != Unschedulable || out.fwStatus == nil || !s.cur.fw.Framework().HasPostFilterPlugins() {
		return
	}
	_, st := s.cur.fw.RunPostFilterWithoutPreemption(ctx, cs, info.Item, orderedStatus{out.fwStatus})
	if st.Code() == fwk.Error {
		s.o.Logger.Debug("PostFilter", "pod", info.Key, "err", st.AsError())
		return
	}
	if msg := st.Message(); msg != "" {
		out.Message += " " + msg
		if !st.IsSuccess() {
			out.Reasons = append(out.Reasons, msg)
		}
	}
}

// begin readies f for pod's PostFilter: the preemptor with the queue's
// nomination, the victims being evicted, no victims collected.
func (f *fwPreemption) begin(pod *v1.Pod) {
	p := *pod
	p.Status.NominatedNodeName = ""
	if f.s.hasNom {
		p.Status.NominatedNodeName = f.s.ownNom
	}
	f.pod = &p
	f.leaving = f.s.pre.leaving()
	f.order = f.order[:0]
	f.mu.Lock()
	f.node, f.victims, f.violations, f.free = "", nil, 0, ""
	f.mu.Unlock()
}

// end drops what begin read, so that nothing is pinned between cycles.
func (f *fwPreemption) end() { f.pod, f.leaving = nil, nil }

// collect is the executor's PreemptPod: it records victim for act, which
// hands the victims to the Evictor after the cycle.
func (f *fwPreemption) collect(_ context.Context, c fwpreemption.Candidate, _ fwpreemption.ExecutorPreemptor, victim *v1.Pod, _ string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.node, f.violations = c.Name(), int(c.Victims().NumPDBViolations)
	f.victims = append(f.victims, victim)
	return false, nil
}

// eligibleVictim is DefaultPreemption's IsEligiblePod: a pod that is
// terminating, or being evicted, is never a victim (its room is being
// freed already).
func (f *fwPreemption) eligibleVictim(_ fwk.NodeInfo, v fwpreemption.Victim, _ *v1.Pod) bool {
	for _, pi := range v.Pods() {
		if f.isLeaving(pi.GetPod()) {
			return false
		}
	}
	return true
}

// isLeaving reports whether p is terminating or being evicted.
func (f *fwPreemption) isLeaving(p *v1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return true
	}
	_, ok := f.leaving[p.UID]
	return ok
}

// moreImportantVictim orders single-pod victims by morePod (higher
// priority, then earlier start, creation if not started), without reading the wall clock as upstream's does for a pod
// that has not started; group victims keep upstream's order.
func moreImportantVictim(a, b fwpreemption.Victim) bool {
	if a.Type() != fwk.PodKeyType || b.Type() != fwk.PodKeyType || len(a.Pods()) == 0 || len(b.Pods()) == 0 {
		return fwpreemption.MoreImportantVictim(a, b)
	}
	return morePod(a.Pods()[0].GetPod(), b.Pods()[0].GetPod()) < 0
}

// fwPreemptRules is DefaultPreemption's preemption.Interface with
// schedq's rules (see the top of this file) over upstream's.
type fwPreemptRules struct {
	*defaultpreemption.DefaultPreemption
	f *fwPreemption
}

// GetOffsetAndNumCandidates draws the dry run's first node from the
// scheduler's Rand.
func (r *fwPreemptRules) GetOffsetAndNumCandidates(n int32) (int32, int32) {
	_, num := r.DefaultPreemption.GetOffsetAndNumCandidates(n)
	return r.f.s.o.Rand.Int32N(n), num
}

// PodEligibleToPreemptOthers is upstream's rule, then schedq's: a pod
// whose last preemption is still being carried out, or whose nominated
// node has a pod of lower priority terminating or being evicted, waits.
func (r *fwPreemptRules) PodEligibleToPreemptOthers(ctx context.Context, pod *v1.Pod, nomStatus *fwk.Status) (bool, string) {
	if ok, why := r.DefaultPreemption.PodEligibleToPreemptOthers(ctx, pod, nomStatus); !ok {
		return false, why
	}
	f := r.f
	if f.s.pre.isRunning(pod.UID) {
		return false, "not eligible: its victims are still being evicted."
	}
	node := pod.Status.NominatedNodeName
	if node == "" || nomStatus.Code() == fwk.UnschedulableAndUnresolvable {
		return true, ""
	}
	ni, err := f.fw.Snapshot().NodeInfos().Get(node)
	if err != nil {
		return true, ""
	}
	prio := framework.Priority(pod)
	for _, pi := range ni.GetPods() {
		p := pi.GetPod()
		if framework.Priority(p) >= prio {
			continue
		}
		if p.DeletionTimestamp != nil {
			f.s.pre.seen(p.UID)
			return false, "not eligible: a pod on its nominated node " + node + " is still terminating."
		}
		if _, ok := f.leaving[p.UID]; ok {
			return false, "not eligible: a pod on its nominated node " + node + " is being evicted."
		}
	}
	return true, ""
}

// SelectVictimsOnNode is upstream's on ni (the dry run's copy of the
// node) without the pods that are leaving it, terminating or being
// evicted: their room counts as free. If the pod fits with that alone,
// the node needs no victim: it is recorded (the first such node the dry
// run finds) and the pod is nominated there (fwPreempt). A plugin's
// panic is an error for that node: the dry run calls this on the
// parallelizer's goroutine, out of reach of the cycle's recovery: the
// parallelizer logs a panic there and panics again, which ends the
// process.
func (r *fwPreemptRules) SelectVictimsOnNode(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo, all []*fwpreemption.DomainVictim, pdbs []*policyv1.PodDisruptionBudget) (victims []*v1.Pod, violations int, st *fwk.Status) {
	defer func() {
		if p := recover(); p != nil {
			victims, violations = nil, 0
			st = fwk.AsStatus(fmt.Errorf("preemption on node %s: plugin panic: %v", ni.Node().Name, p))
		}
	}()
	fw, f := r.f.fw.Framework(), r.f
	var leaving []fwk.PodInfo // nil, and nothing copied, on a node no pod leaves
	for _, pi := range ni.GetPods() {
		if f.isLeaving(pi.GetPod()) {
			leaving = append(leaving, pi)
		}
	}
	for _, pi := range leaving {
		if err := ni.RemovePod(klog.FromContext(ctx), pi.GetPod()); err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
		if st := fw.RunPreFilterExtensionRemovePod(ctx, cs, pod, pi, ni); !st.IsSuccess() {
			return nil, 0, st
		}
	}
	if len(leaving) > 0 && fw.RunFilterPluginsWithNominatedPods(ctx, cs, pod, ni).IsSuccess() {
		f.mu.Lock()
		if f.free == "" {
			f.free = ni.Node().Name
		}
		f.mu.Unlock()
		return nil, 0, fwk.NewStatus(fwk.Unschedulable, "room is being freed by pods leaving the node")
	}
	return r.DefaultPreemption.SelectVictimsOnNode(ctx, cs, pod, ni, all, pdbs)
}

// CandidatesToVictimsMap is upstream's; it also records the candidates'
// order for OrderedScoreFuncs.
func (r *fwPreemptRules) CandidatesToVictimsMap(cands []fwpreemption.Candidate) map[string]*extenderv1.Victims {
	r.f.order = r.f.order[:0]
	for _, c := range cands {
		r.f.order = append(r.f.order, c.Name())
	}
	return r.DefaultPreemption.CandidatesToVictimsMap(cands)
}

// OrderedScoreFuncs picks the candidate with pickCandidate (upstream's
// criteria, then the first found) and scores
// it alone, so that upstream's pick, which ranges over a map, cannot
// break the last tie at random.
func (r *fwPreemptRules) OrderedScoreFuncs(_ context.Context, m map[string]*extenderv1.Victims) []func(string) int64 {
	cands := make([]Candidate, 0, len(m))
	for _, node := range r.f.order {
		if v := m[node]; v != nil && len(v.Pods) > 0 {
			cands = append(cands, Candidate{Node: node, Victims: v.Pods, PDBViolations: int(v.NumPDBViolations)})
		}
	}
	if len(cands) == 0 {
		return nil
	}
	best := pickCandidate(cands).Node
	return []func(string) int64{func(node string) int64 {
		if node == best {
			return 1
		}
		return 0
	}}
}

// orderedStatus is the cycle's node statuses as PostFilter reads them,
// with the nodes of a status code listed in the snapshot's order:
// upstream's NodeToStatus lists them from a map, in an order that
// changes from run to run, and DefaultPreemption's dry run visits them
// in that order. O(nodes) per call.
type orderedStatus struct{ m *fwframework.NodeToStatus }

// Get returns node's status.
func (o orderedStatus) Get(node string) *fwk.Status { return o.m.Get(node) }

// NodesForStatusCode lists the nodes of l whose status has code, in l's
// order.
func (o orderedStatus) NodesForStatusCode(l fwk.NodeInfoLister, code fwk.Code) ([]fwk.NodeInfo, error) {
	all, err := l.List()
	if err != nil {
		return nil, err
	}
	var out []fwk.NodeInfo
	for _, ni := range all {
		if o.m.Get(ni.Node().Name).Code() == code {
			out = append(out, ni)
		}
	}
	return out, nil
}
