package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// The single-pod cycle on kube-scheduler's framework (the pod's profile's):
// the snapshot is brought up to date from the cache (Cache.UpdateSnapshot)
// and every plugin then runs on it with no lock of schedq's held. A pod
// that fits nowhere runs the PostFilter plugins (fwpreempt.go). Group
// attempts reuse fwFind (fwgroup.go).

// fwNominator serves the framework's PodNominator from the queue's
// nominations, read before each cycle (readFWNominations), so that no
// plugin calls the queue.
// Nominations are written through the queue only, after the cycle: the
// framework's writes are ignored. Only the scheduling loop uses it.
type fwNominator struct {
	pods map[string][]fwk.PodInfo
}

func (n *fwNominator) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (n *fwNominator) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (n *fwNominator) UpdateNominatedPod(klog.Logger, *v1.Pod, fwk.PodInfo)          {}

// NominatedPodsForNode returns the pods nominated to node, as read before
// the cycle. O(1).
func (n *fwNominator) NominatedPodsForNode(node string) []fwk.PodInfo { return n.pods[node] }

// readFWNominations reads the queue's nominations for a cycle of pod:
// the pods of its priority or higher nominated per node, and its own.
// O(nominated pods).
func (s *Scheduler) readFWNominations(key types.NamespacedName, pod *v1.Pod) {
	s.readNominationsBut(key, pod, nil)
}

// readNominationsBut is readFWNominations leaving out the pods whose keys
// are in placed too: a group attempt's members placed in its trial, whose
// room the snapshot counts already. O(nominated pods).
func (s *Scheduler) readNominationsBut(key types.NamespacedName, pod *v1.Pod, placed map[types.NamespacedName]struct{}) {
	s.ownNom, s.hasNom = s.queue.Nomination(key)
	clear(s.fwNom.pods)
	s.nomHash = 0
	targets := s.queue.NominatedTargets()
	prio := framework.Priority(pod)
	for _, node := range targets {
		for _, p := range s.queue.Nominated(node) {
			if framework.Priority(p) < prio || framework.Key(p) == key {
				continue
			}
			if _, in := placed[framework.Key(p)]; in {
				continue
			}
			pi, err := fwframework.NewPodInfo(p)
			if err != nil {
				continue
			}
			if s.fwNom.pods == nil {
				s.fwNom.pods = map[string][]fwk.PodInfo{}
			}
			s.fwNom.pods[node] = append(s.fwNom.pods[node], pi)
			s.nomHash ^= nominationHash(p, node)
		}
	}
}

// scheduleFramework is scheduleOne for a lone pod on the framework:
// PreFilter, Filter (with the nominated pods) on a sample of the nodes,
// PreScore, Score and a random pick among the best; then, on the chosen
// node, the pod is assumed in the cache, Reserve and Permit run, and the
// binding starts, after PreBind if a plugin has work there.
func (s *Scheduler) scheduleFramework(ctx context.Context, info Attempt) Outcome {
	pod := info.Item
	start := s.o.Now()
	pi, err := s.podInfo(pod)
	if err != nil {
		return s.fail(ctx, info, start, Outcome{Result: Error, Message: "invalid pod: " + err.Error()})
	}
	s.readFWNominations(info.Key, pod)
	s.fwCycle++
	s.sig = s.cur.fw.SignPod(ctx, pod)
	defer func() { s.ownNom, s.hasNom, s.sig = "", false, nil; clear(s.fwNom.pods) }()
	st, removals, err := s.cache.updateSnapshot(s.cur.fw.Snapshot())
	if err != nil {
		s.endNomination(pod, "no snapshot") // as kube-scheduler clears it then
		return s.fail(ctx, info, start, Outcome{Result: Error, Message: "snapshot: " + err.Error()})
	}
	s.snapRemovals = removals
	cs := newFWCycleState()
	out := s.fwFind(ctx, cs, pi)
	s.fwPreempt(ctx, cs, info, &out)
	out.state = st
	out.state.noms = s.nomHash
	if out.clearNom != "" {
		s.unnominateAs(info.Key, pod.UID, out.clearNom)
	}
	if out.Result == Error {
		// As kube-scheduler clears the nomination after an error in its
		// search for a node.
		s.endNomination(pod, "its search failed")
	}
	if out.Result != Scheduled {
		s.batch.drop()
		s.act(ctx, info, &out)
		return s.fail(ctx, info, start, out)
	}
	done := s.fwCommit(ctx, info, pi, cs, out, start)
	if done.Result != Scheduled {
		s.batch.drop()
	}
	return done
}

// podInfo returns pod's PodInfo. A pod whose namespace and spec are the
// last cycle's pod's, byte for byte (pods copied from one template, as a
// controller's or the simulator's are), gets a copy of that pod's: a
// PodInfo depends on nothing else, so its requests and affinity terms are
// not computed again. O(size of a PodSpec) then, else NewPodInfo's cost.
// Used by the scheduling loop only.
func (s *Scheduler) podInfo(pod *v1.Pod) (*framework.PodInfo, error) {
	if last := s.lastPI; last != nil && last.Pod.Namespace == pod.Namespace && sameBytes(&last.Pod.Spec, &pod.Spec) {
		pi := *last
		pi.Pod = pod
		return &pi, nil
	}
	pi, err := framework.NewPodInfo(pod)
	if err == nil {
		s.lastPI = pi
	}
	return pi, err
}

// fwFind finds the node for pod: its nominated node if it passes the
// filters there, else the best of the feasible nodes found among
// feasibleToFind of them, starting where the last cycle stopped. A pod
// whose requests cannot be accounted (pi.InvalidRequests) fits nowhere:
// kube-scheduler's NodeResourcesFit would place it on a node it
// overflows.
func (s *Scheduler) fwFind(ctx context.Context, cs fwk.CycleState, pi *framework.PodInfo) Outcome {
	pod := pi.Pod
	fw := s.cur.fw.Framework()
	snap := s.cur.fw.Snapshot()
	all, err := snap.NodeInfos().List()
	if err != nil {
		return Outcome{Result: Error, Message: err.Error()}
	}
	if len(all) == 0 {
		// Every filter would have to pass on a new node: their hints
		// decide when one arrives. A nomination ends, as kube-scheduler
		// clears it when no node is registered.
		return Outcome{Result: Unschedulable, Plugins: slices.Clone(s.filterPlugins()),
			Message: "0/0 nodes are available: no nodes available to schedule pods.", clearNom: "no nodes"}
	}
	diag := fwframework.Diagnosis{NodeToStatus: fwframework.NewDefaultNodeToStatus()}
	pre, unsched, o, done := s.fwPreFilter(ctx, cs, pi, len(all), &diag)
	if done {
		return o
	}
	var out Outcome
	if s.hasNom {
		ni, err := snap.NodeInfos().Get(s.ownNom)
		switch {
		case err != nil:
			out.clearNom = "nominated node is gone"
		case fw.RunFilterPluginsWithNominatedPods(ctx, cs, pod, ni).IsSuccess():
			out.Result, out.Node = Scheduled, s.ownNom
			s.batch.drop()
			return out
		}
	}
	if node, ok := s.fwHint(ctx, cs, pod); ok {
		out.Result, out.Node = Scheduled, node
		return out
	}
	nodes := preFiltered(all, pre, unsched, &diag)
	memo := s.verdicts(ctx, cs, pod, len(all))
	defer memo.endCycle()
	memo.bound(len(all))
	if o, ok := s.repeated(memo, nodes, len(all)); ok {
		s.nextStart = (s.nextStart + len(nodes)) % len(all)
		o.clearNom = out.clearNom
		return o
	}
	feasible, errOut := s.fwFilter(ctx, cs, pod, nodes, len(all), &diag, memo)
	if errOut != nil {
		errOut.clearNom = out.clearNom
		return *errOut
	}
	if len(feasible) == 0 {
		o := fitOutcomeOf(pod, len(all), diag, s.runs)
		memo.failed(o, nodes, len(all))
		o.clearNom = out.clearNom
		return o
	}
	out.Result = Scheduled
	if len(feasible) == 1 {
		out.Node = feasible[0].Node().Name
		s.batch.drop()
		return out
	}
	node, err := s.fwPick(ctx, cs, pod, feasible)
	if err != nil {
		return Outcome{Result: Error, Message: err.Error(), clearNom: out.clearNom}
	}
	out.Node = node
	return out
}

// preFiltered returns the nodes of all that the PreFilter result pre
// keeps (all of them if it names none) and, if it keeps fewer, records in
// diag that the others failed the plugins unsched. O(nodes).
func preFiltered(all []fwk.NodeInfo, pre *fwk.PreFilterResult, unsched sets.Set[string], diag *fwframework.Diagnosis) []fwk.NodeInfo {
	if pre.AllNodes() {
		return all
	}
	nodes := make([]fwk.NodeInfo, 0, len(pre.NodeNames))
	for _, ni := range all {
		if pre.NodeNames.Has(ni.Node().Name) {
			nodes = append(nodes, ni)
		}
	}
	diag.NodeToStatus.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
		fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unsched))))
	return nodes
}

// fwPreFilter runs the PreFilter plugins for the pod of pi (or refuses
// it at once for requests that overflow, as NodeResourcesFit would) and
// returns their result, the plugins that rejected, and, with done, the
// outcome if the cycle ends here: an error, or no node because a
// PreFilter rejected. n is the number of nodes, for the message.
func (s *Scheduler) fwPreFilter(ctx context.Context, cs fwk.CycleState, pi *framework.PodInfo, n int,
	diag *fwframework.Diagnosis) (pre *fwk.PreFilterResult, unsched sets.Set[string], o Outcome, done bool) {
	pod := pi.Pod
	if pi.InvalidRequests != nil {
		st := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, pi.InvalidRequests.Error()).WithPlugin(nodeResourcesFit)
		diag.NodeToStatus.SetAbsentNodesStatus(st)
		diag.PreFilterMsg = st.Message()
		diag.AddPluginStatus(st)
		return nil, nil, fitOutcome(pod, n, *diag), true
	}
	pre, st, unsched := s.cur.fw.Framework().RunPreFilterPlugins(ctx, cs, pod)
	diag.UnschedulablePlugins = unsched
	if st.IsSuccess() {
		return pre, unsched, Outcome{}, false
	}
	if !st.IsRejected() {
		return nil, nil, Outcome{Result: Error, Message: st.AsError().Error()}, true
	}
	diag.NodeToStatus.SetAbsentNodesStatus(st)
	diag.PreFilterMsg = st.Message()
	diag.AddPluginStatus(st)
	return nil, nil, fitOutcome(pod, n, *diag), true
}

// fwFilter runs the filters, with the nominated pods, on nodes from
// nextStart on, until it has found as many feasible nodes as
// feasibleToFind allows (one, without score plugins). If it finds none,
// it records each rejection in diag; a cycle that finds a node reads no
// diagnosis, so the rejections are only listed until then (on a full
// cluster, most examined nodes reject the pod). A filter's error ends the
// search with an Error outcome. O(examined nodes x filters); a node that
// has not changed since a pod of the same signature was filtered there
// costs O(1) instead, when the memo applies (fwfiltermemo.go).
func (s *Scheduler) fwFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo, numAll int, diag *fwframework.Diagnosis, memo *sigMemo) ([]fwk.NodeInfo, *Outcome) {
	fw := s.cur.fw.Framework()
	pct := s.o.PercentageOfNodesToScore
	if p := fw.PercentageOfNodesToScore(); p != nil {
		pct = int(*p)
	}
	want := feasibleToFind(len(nodes), pct)
	if !fw.HasScorePlugins() {
		want = 1
	}
	feasible := make([]fwk.NodeInfo, 0, min(want, len(nodes)))
	rejected := s.rejected[:0]
	defer func() { clear(rejected); s.rejected = rejected[:0] }()
	processed := 0
	for i := 0; i < len(nodes) && len(feasible) < want; i++ {
		at := (s.nextStart + i) % len(nodes)
		ni := nodes[at]
		processed++
		st, code := s.filterNode(ctx, cs, pod, ni, at, memo)
		if code == fwk.Success {
			feasible = append(feasible, ni)
			continue
		}
		if code == fwk.Error {
			s.nextStart = (s.nextStart + processed) % numAll
			return nil, &Outcome{Result: Error, Message: fmt.Sprintf("node %s: %v", ni.Node().Name, st.AsError())}
		}
		rejected = append(rejected, nodeStatus{ni, st})
	}
	s.nextStart = (s.nextStart + processed) % numAll
	if len(feasible) == 0 {
		s.runs = noteRejections(diag, rejected, s.runs[:0])
	}
	return feasible, nil
}

// noteRejections records each rejected node's status in diag, as its
// node's status and its plugin's (Diagnosis.AddPluginStatus). A status
// of the plugin and code of the status before adds nothing to the
// plugins' sets (AddPluginStatus reads nothing else of it), so it is
// not added again: a full cluster's nodes mostly reject with the
// memo's one status of their signature, and each add hashed the
// plugin's name. An empty map of statuses is made with room for every
// rejection, rather than grown node by node.
//
// If diag had no node's status before, it returns the rejections'
// reasons as runs appended to runs (for fitOutcomeOf): the nodes'
// statuses, in rejected's order, each run of equal reasons once with
// its number of nodes; nil otherwise. O(rejected).
func noteRejections(diag *fwframework.Diagnosis, rejected []nodeStatus, runs []reasonRun) []reasonRun {
	fresh := diag.NodeToStatus.Len() == 0
	if fresh {
		diag.NodeToStatus = fwframework.NewNodeToStatus(make(map[string]*fwk.Status, len(rejected)), diag.NodeToStatus.AbsentNodesStatus())
		if runs == nil {
			runs = []reasonRun{}
		}
	}
	var last *fwk.Status
	for _, r := range rejected {
		diag.NodeToStatus.Set(r.node.Node().Name, r.st)
		if last == nil || r.st != last && (r.st.Plugin() != last.Plugin() || r.st.Code() != last.Code()) {
			diag.AddPluginStatus(r.st)
		}
		if fresh {
			if n := len(runs); n > 0 && (r.st == last || slices.Equal(r.st.Reasons(), runs[n-1].reasons)) {
				runs[n-1].n++
			} else {
				runs = append(runs, reasonRun{reasons: r.st.Reasons(), n: 1})
			}
		}
		last = r.st
	}
	if !fresh {
		return nil
	}
	return runs
}

// reasonRun is n rejected nodes, one after another in a cycle's order,
// whose statuses give the same reasons.
type reasonRun struct {
	reasons []string
	n       int
}

// nodeStatus is a node's filter status.
type nodeStatus struct {
	node fwk.NodeInfo
	st   *fwk.Status
}

// fwPick runs PreScore and Score on the feasible nodes and returns the
// best, ties broken at random (each node gets a random tie-breaker, as
// kube-scheduler's do). The others, best first, start a batch for the
// next cycle (fwbatch.go). O(feasible x scorers).
func (s *Scheduler) fwPick(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, feasible []fwk.NodeInfo) (string, error) {
	fw := s.cur.fw.Framework()
	if st := fw.RunPreScorePlugins(ctx, cs, pod, feasible); !st.IsSuccess() {
		return "", st.AsError()
	}
	ctx = s.cur.fw.WithPanicSink(ctx) // Score runs on the parallelizer
	scores, st := s.cur.fw.ScoreNodesInto(ctx, cs, pod, feasible, s.scores)
	s.scores = scores
	profile.RepanicIn(ctx, st.IsSuccess() && !profile.ScoredAll(scores)) // here, where the cycle's recovery fails this pod
	if !st.IsSuccess() {
		return "", st.AsError()
	}
	best := 0
	for i := range scores {
		scores[i].Randomizer = s.o.Rand.Int()
		if scoreBefore(scores[i], scores[best]) {
			best = i
		}
	}
	s.keepBatch(best, scores, feasible)
	return scores[best].Name, nil
}

// fitOutcome is the Unschedulable outcome of a diagnosis: upstream's
// FitError message ("0/N nodes are available: ..."), the rejecting
// plugins and the pending ones, sorted.
// Reasons are the distinct reasons of the nodes' statuses, sorted (the
// absent nodes' status included), and PreFilter's message if it rejected
// the pod on every node.
func fitOutcome(pod *v1.Pod, numAll int, diag fwframework.Diagnosis) Outcome {
	return fitOutcomeOf(pod, numAll, diag, nil)
}

// fitOutcomeOf is fitOutcome, given the nodes' reasons as runs
// (noteRejections') if runs is not nil: what it reads of the nodes'
// statuses, the set of reasons and upstream's count of nodes per
// reason in the message, is then read once per run of equal reasons,
// not once per node through the map of statuses; the message is
// fitMessage's, upstream's FitError's. O(runs x reasons) then.
func fitOutcomeOf(pod *v1.Pod, numAll int, diag fwframework.Diagnosis, runs []reasonRun) Outcome {
	fe := &fwframework.FitError{Pod: pod, NumAllNodes: numAll, Diagnosis: diag}
	reasons := sets.New[string]()
	if runs != nil && diag.PreFilterMsg == "" && diag.PostFilterMsg == "" {
		for _, r := range runs {
			reasons.Insert(r.reasons...)
		}
		if st := diag.NodeToStatus.AbsentNodesStatus(); st != nil {
			reasons.Insert(st.Reasons()...)
		}
		return Outcome{Result: Unschedulable, Message: fitMessage(numAll, diag.NodeToStatus, runs), Reasons: sets.List(reasons),
			Plugins: sets.List(diag.UnschedulablePlugins), Pending: sets.List(diag.PendingPlugins),
			fwStatus: diag.NodeToStatus}
	}
	if diag.NodeToStatus != nil {
		// Most rejected nodes give the reason the node before gave (a
		// full cluster's "Insufficient cpu", one string): compared with
		// it, the set hashes each distinct run once instead of once per
		// node. The set is the same.
		var last []string
		diag.NodeToStatus.ForEachExplicitNode(func(_ string, st *fwk.Status) {
			r := st.Reasons()
			if fitOutcomeRuns && slices.Equal(r, last) {
				return
			}
			reasons.Insert(r...)
			last = r
		})
		if st := diag.NodeToStatus.AbsentNodesStatus(); st != nil {
			reasons.Insert(st.Reasons()...)
		}
	}
	if diag.PreFilterMsg != "" {
		reasons.Insert(diag.PreFilterMsg)
	}
	return Outcome{Result: Unschedulable, Message: fe.Error(), Reasons: sets.List(reasons),
		Plugins: sets.List(diag.UnschedulablePlugins), Pending: sets.List(diag.PendingPlugins),
		fwStatus: diag.NodeToStatus}
}

// fitMessage is upstream's FitError message for a diagnosis without
// PreFilter's or PostFilter's message, of numAll nodes whose explicit
// statuses (in statuses) give the reasons of runs: "0/N nodes are
// available:", then, if any, each reason with its number of nodes
// ("N reason", the absent nodes' status's reasons counted for every node
// without a status), sorted as strings, joined by ", " and ended by a
// full stop. O(runs x reasons + distinct reasons x log).
func fitMessage(numAll int, statuses *fwframework.NodeToStatus, runs []reasonRun) string {
	count := map[string]int{}
	for _, r := range runs {
		for _, reason := range r.reasons {
			count[reason] += r.n
		}
	}
	if absent := numAll - statuses.Len(); absent > 0 {
		for _, reason := range statuses.AbsentNodesStatus().Reasons() {
			count[reason] += absent
		}
	}
	msg := fmt.Sprintf(fwframework.NoNodeAvailableMsg+":", numAll)
	if len(count) == 0 {
		return msg
	}
	lines := make([]string, 0, len(count))
	for reason, n := range count {
		lines = append(lines, strconv.Itoa(n)+" "+reason)
	}
	slices.Sort(lines)
	return msg + " " + strings.Join(lines, ", ") + "."
}

// fitOutcomeRuns turns fitOutcome's skip of a node's reasons equal to
// the node's before on; tests turn it off to compare.
var fitOutcomeRuns = true

// filterPlugins lists the framework's filter plugins, which it keeps for
// its life: listed once, since the framework builds its whole
// configuration to list them. The caller must not change the list. O(1)
// after the first call.
func (s *Scheduler) filterPlugins() []string {
	if s.cur.filterNames == nil {
		s.cur.filterNames = fwFilterNames(s.cur.fw.Framework())
	}
	return s.cur.filterNames
}

// fwFilterNames lists the framework's filter plugins.
func fwFilterNames(fw fwframework.Framework) []string {
	names := []string{} // not nil: filterPlugins lists them once
	if p := fw.ListPlugins(); p != nil {
		for _, pl := range p.Filter.Enabled {
			names = append(names, pl.Name)
		}
	}
	return names
}

// The names of two of kube-scheduler's plugins: nodeResourcesFit
// accounts requests (a pod whose requests overflow is parked behind it);
// dynamicResources allocates claims (fwfiltermemo.go).
const (
	nodeResourcesFit = "NodeResourcesFit"
	dynamicResources = "DynamicResources"
)
