// Package scheduler is schedq's Kubernetes scheduler: the scheduling cycle
// (filter, score, pick, assume, bind) over the cache, the failure handling
// that feeds the queue, and the handlers that turn cluster events into
// queue operations. The same code runs against a real API server (see
// api.go) and in the simulator, which supplies its own Binder, Reporter,
// clock and queue in virtual time.
package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// Attempt is one attempt to schedule a pod, as the queue's Pop returns it.
type Attempt = schedq.Attempt[types.NamespacedName, *v1.Pod]

// Queue is what the scheduler needs of a schedq queue of pods: the
// queue's own methods, with the same meaning, nominations and pod groups
// included. It is the one queue interface of the scheduler, the handlers
// and the startup path; nothing is looked up by type assertion, so a
// wrapper (kube/app's queue of the current term) cannot hide a part.
// *schedq.Queue[types.NamespacedName, *v1.Pod] implements it.
//
// Nominations (see schedq.Core.Nominate): which pod is nominated to which
// node. The queue keeps them consistent: a pod deleted or bound is no
// longer nominated. Groups: the PodGroups, named "namespace/name".
//
// Lock order (see also Cache): the queue's methods run under the queue's
// lock, and the wake budget's room (WakeBudget) runs under it too; under
// that lock only the cache's room index, a leaf, is taken, never the
// cache's own lock. The scheduling cycle calls no method of the queue
// while it holds the cache's lock: it reads nominations before its view
// and writes them (and requeues) after it.
type Queue interface {
	Add(pod *v1.Pod) error
	Update(oldPod, newPod *v1.Pod) error
	Delete(key types.NamespacedName) error
	Done(a Attempt) error
	Requeue(a Attempt, f schedq.Failure) error
	DoneMembers(a Attempt, placed []int, message string) error
	Park(pod *v1.Pod, f schedq.Failure) error
	Move(ev schedq.Event, oldObj, newObj any, match func(*schedq.Info[*v1.Pod]) bool) error
	Get(key types.NamespacedName) (schedq.Info[*v1.Pod], schedq.Location, bool)

	Nominate(key types.NamespacedName, node string) error
	Nomination(key types.NamespacedName) (string, bool)
	Nominated(node string) []*v1.Pod
	NominatedTargets() []string

	SetGroup(name string, spec schedq.GroupSpec) error
	DeleteGroup(name string) error
}

var _ Queue = (*schedq.Queue[types.NamespacedName, *v1.Pod])(nil)

// Binder binds a pod to a node and calls done with the result, now or
// later (from another goroutine in a real cluster).
type Binder interface {
	Bind(ctx context.Context, pod *v1.Pod, node string, done func(error))
}

// Reporter tells the world about attempts: the pod's PodScheduled
// condition and events, in a real cluster.
type Reporter interface {
	Unschedulable(ctx context.Context, pod *v1.Pod, reason, message string)
	Scheduled(ctx context.Context, pod *v1.Pod, node string)
}

// RecordingReporter is a Reporter that also leaves, on a pod found
// unschedulable, the failure record a new leader reads (failover.go).
type RecordingReporter interface {
	Reporter
	UnschedulableRecorded(ctx context.Context, pod *v1.Pod, message string, rec FailureRecord)
}

// Options configures a Scheduler. Zero fields take the defaults noted.
type Options struct {
	// Profile is the plugins to run. Required.
	Profile framework.Profile
	// PercentageOfNodesToScore bounds how many feasible nodes a cycle looks
	// for before scoring, as kube-scheduler does. 0: adaptive (all nodes up
	// to 100, then 50% falling to 5% as the cluster grows, at least 100).
	PercentageOfNodesToScore int
	// Rand breaks ties between equally scored nodes. Default: seeded from
	// the wall clock.
	Rand *rand.Rand
	// Now is the clock for durations. Default time.Now.
	Now func() time.Time
	// Metrics records attempts. Nil records nothing.
	Metrics *Metrics
	// Logger. Default slog.Default().
	Logger *slog.Logger
	// Framework, if not nil, schedules lone pods and group attempts with
	// kube-scheduler's framework and plugins (fwcycle.go, fwgroup.go)
	// instead of Profile's, and preempts with its PostFilter plugins
	// (fwpreempt.go); Profile's group plugin (else GangScheduling) decides
	// a group's quorum. New makes the cache track
	// kube-scheduler's cache for its snapshot (Cache.TrackUpstream) and
	// gives the framework the queue's nominations. Its profile's
	// percentageOfNodesToScore, if set, overrides PercentageOfNodesToScore.
	Framework *profile.Framework
	// SyncPreBind runs the framework's PreBind plugins on the cycle's
	// goroutine, before the binding starts, instead of on one of the
	// binding's own: for the simulator, whose event loop is the only
	// writer of its cluster and answers the plugins' API calls itself.
	SyncPreBind bool
}

// Scheduler runs scheduling cycles. ScheduleOne is not safe for concurrent
// use: one loop pops and schedules, as in kube-scheduler.
type Scheduler struct {
	queue    Queue
	cache    *Cache
	binder   Binder
	reporter Reporter
	o        Options

	nextStart int
	// feasible is findNode's list of feasible nodes, kept from cycle to
	// cycle so that a large cluster does not allocate one per cycle.
	feasible []*framework.NodeInfo
	// filters is findNode's list of the filters a cycle runs, when
	// PreFilter lets it skip some.
	filters []framework.FilterPlugin

	// release is gang release (gang_release.go): nil when off.
	release *gangRelease

	// Preemption (preempt_*.go): nil when off; the cycle's nominated
	// pods per node and scratch space.
	pre     *preemptor
	nomPods map[string][]*framework.PodInfo
	// ownNom is the popped pod's nomination (if hasNom), read with
	// nomPods before the cycle's view.
	ownNom  string
	hasNom  bool
	nomNode framework.NodeInfo
	srch    search
	// fwNom serves Options.Framework the nominations read before the
	// cycle.
	fwNom fwNominator
	// fwCycle numbers the framework path's lone-pod cycles, sig is the
	// current one's pod signature (nil outside such a cycle or if a
	// plugin cannot sign the pod), and batch is what it may reuse of the
	// cycle before (fwbatch.go).
	fwCycle uint64
	sig     fwk.PodSignature
	batch   fwBatch
	// fmemo keeps filter verdicts per signature and node generation
	// (fwfiltermemo.go); fmemoHits counts the verdicts read from it and
	// fmemoRepeats the failed cycles repeated whole; noFilterMemo turns it
	// off (tests compare with and without).
	fmemo                   filterMemo
	fmemoHits, fmemoRepeats uint64
	noFilterMemo            bool
	// snapRemovals is the cache's count of node removals as of the
	// cycle's snapshot (upstreamMirror.removals).
	snapRemovals uint64
	// fwPre adapts Options.Framework's DefaultPreemption (fwpreempt.go):
	// nil without preemption or without that plugin.
	fwPre *fwPreemption
	// committed says the cycle handed its attempt to bindings: a panic
	// after that point does not requeue it (see recovered).
	committed bool
}

// New returns a scheduler.
func New(q Queue, c *Cache, b Binder, r Reporter, o Options) *Scheduler {
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Scheduler{queue: q, cache: c, binder: b, reporter: r, o: o}
	if o.Framework != nil {
		c.TrackUpstream()
		o.Framework.Framework().SetPodNominator(&s.fwNom)
	}
	return s
}

// Result is how an attempt ended.
type Result int

// The results, as the schedule_attempts_total metric names them.
const (
	Scheduled Result = iota
	Unschedulable
	Error
)

func (r Result) String() string { return [...]string{"scheduled", "unschedulable", "error"}[r] }

// Outcome describes one scheduling cycle.
type Outcome struct {
	Result  Result
	Node    string // chosen node (binding may still fail)
	Message string // why not, for Unschedulable and Error
	Plugins []string
	// Pending are the plugins that left the pod waiting for something
	// that happens by itself (the framework's Pending status).
	Pending []string
	// Reasons are why not as data (schedq.Failure.Reasons): the distinct
	// reasons the filters gave, sorted, then preemption's.
	Reasons []string
	// Nominated is the node that preemption chose for the pod, and
	// Victims the pods it evicts there (see EnablePreemption).
	Nominated string
	Victims   []*v1.Pod

	state   clusterState
	preempt *preemption // the cache's fingerprints during the cycle
	// clearNom, if set, is why the pod's nomination is cleared after the
	// cycle's view.
	clearNom string
	// fwStatus is the framework path's node statuses, for PostFilter.
	fwStatus *fwframework.NodeToStatus
}

// ScheduleOne runs the scheduling cycle for a popped pod: filter, score,
// pick a node, assume the pod there and start its binding. A failure goes
// back to the queue: with the rejecting plugins if it was unschedulable, as
// an error otherwise. A panic in the cycle (a plugin's, say) fails that
// attempt only, as an error (see recovered); the scheduler goes on.
func (s *Scheduler) ScheduleOne(ctx context.Context, info Attempt) (out Outcome) {
	start := s.o.Now()
	s.committed = false
	defer func() {
		if r := recover(); r != nil {
			out = s.recovered(ctx, info, start, r)
		}
	}()
	return s.scheduleOne(ctx, info)
}

// scheduleOne is ScheduleOne without the recovery.
func (s *Scheduler) scheduleOne(ctx context.Context, info Attempt) Outcome {
	if info.Group != "" {
		return s.scheduleGroup(ctx, info)
	}
	if s.o.Framework != nil {
		return s.scheduleFramework(ctx, info)
	}
	pod := info.Item
	start := s.o.Now()
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		return s.fail(ctx, info, start, Outcome{Result: Error, Message: "invalid pod: " + err.Error()})
	}
	// Lock order: the queue's nominations are read before the cache's
	// read lock is taken and written after it is released.
	s.readNominations(info.Key, pod)
	defer s.forgetNominations()
	var out Outcome
	s.cache.View(func(snap framework.Snapshot) {
		out = s.place(ctx, pi, snap)
		out.state = s.cache.stateLocked() // the cluster the verdict is about
	})
	if out.clearNom != "" {
		s.clearNomination(info.Key, out.clearNom)
	}
	if out.Result != Scheduled {
		s.act(ctx, info, &out)
		return s.fail(ctx, info, start, out)
	}
	pb := s.newBinding(info, out.Node)
	if err := s.cache.Assume(pi, out.Node, pb); err != nil {
		return s.fail(ctx, info, start, Outcome{Result: Error, Message: err.Error()})
	}
	s.committed = true // the binding owns the attempt from here
	s.assumed(info.Key)
	s.o.Metrics.attempt(Scheduled, s.o.Now().Sub(start))
	s.bind(ctx, info, out.Node, pb, start)
	return out
}

// fail requeues a failed attempt and reports it.
func (s *Scheduler) fail(ctx context.Context, info Attempt, start time.Time, out Outcome) Outcome {
	pod := info.Item
	f := schedq.Failure{Message: out.Message, Reasons: out.Reasons}
	reason := "SchedulerError"
	if out.Result == Unschedulable {
		f.UnschedulablePlugins, f.PendingPlugins = out.Plugins, out.Pending
		reason = v1.PodReasonUnschedulable
	}
	s.o.Metrics.attempt(out.Result, s.o.Now().Sub(start))
	if err := s.queue.Requeue(info, f); err != nil {
		s.o.Logger.Debug("requeue after failed attempt", "pod", framework.Key(pod), "err", err)
	}
	s.report(ctx, pod, reason, out)
	return out
}

// findNode filters and scores the nodes of snap for pi.
func (s *Scheduler) findNode(ctx context.Context, pi *framework.PodInfo, snap framework.Snapshot) Outcome {
	p := s.o.Profile
	nodes := snap.Nodes()
	if len(nodes) == 0 {
		// Every filter would have to pass on a new node: let their hints
		// decide when a node arrives.
		names := make([]string, 0, len(p.Filter))
		for _, f := range p.Filter {
			names = append(names, f.Name())
		}
		return Outcome{Result: Unschedulable, Plugins: names, Reasons: []string{"no nodes available to schedule pods"},
			Message: "0/0 nodes are available: no nodes available to schedule pods."}
	}
	state := framework.NewCycleState()
	filters := p.Filter
	for _, pf := range p.PreFilter {
		st := pf.PreFilter(ctx, state, pi, snap)
		if st.IsSkip() {
			filters = s.without(filters, pf.Name())
			continue
		}
		if st.IsSuccess() {
			continue
		}
		if st.Code == framework.Error {
			return Outcome{Result: Error, Message: fmt.Sprintf("%s: %s", pf.Name(), st.Message())}
		}
		return Outcome{Result: Unschedulable, Plugins: []string{pf.Name()}, Reasons: slices.Clone(st.Reasons),
			Message: fmt.Sprintf("0/%d nodes are available: %s.", len(nodes), st.Message())}
	}

	want := feasibleToFind(len(nodes), s.o.PercentageOfNodesToScore)
	feasible := s.feasible[:0]
	defer func() { s.feasible = feasible[:0] }()
	reasons := map[string]int{}
	var rejectors []string
	processed := 0
	next := s.nextStart % len(nodes) // wraps by hand: no division per node
	for i := 0; i < len(nodes) && len(feasible) < want; i++ {
		ni := nodes[next]
		if next++; next == len(nodes) {
			next = 0
		}
		processed++
		st := s.filterNominated(ctx, filters, state, pi, ni)
		if st.IsSuccess() {
			feasible = append(feasible, ni)
			continue
		}
		if st.Code == framework.Error {
			return Outcome{Result: Error, Message: fmt.Sprintf("%s on node %s: %s", st.Plugin, ni.Name(), st.Message())}
		}
		for _, r := range st.Reasons {
			reasons[r]++
		}
		if !slices.Contains(rejectors, st.Plugin) {
			rejectors = append(rejectors, st.Plugin)
		}
	}
	s.nextStart = (s.nextStart + processed) % len(nodes)
	if len(feasible) == 0 {
		return Outcome{Result: Unschedulable, Plugins: rejectors, Reasons: slices.Sorted(maps.Keys(reasons)), Message: fitMessage(len(nodes), reasons)}
	}
	return Outcome{Result: Scheduled, Node: s.pick(ctx, state, pi, feasible)}
}

// without returns filters less the one named, in s.filters, a buffer
// kept from cycle to cycle; filters may be that buffer already.
func (s *Scheduler) without(filters []framework.FilterPlugin, name string) []framework.FilterPlugin {
	out := s.filters[:0]
	for _, f := range filters {
		if f.Name() != name {
			out = append(out, f)
		}
	}
	s.filters = out
	return out
}

// filter runs filters on one node, stopping at the first failure.
func filter(ctx context.Context, filters []framework.FilterPlugin, state *framework.CycleState, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	for _, f := range filters {
		if st := f.Filter(ctx, state, pi, ni); !st.IsSuccess() {
			st.Plugin = f.Name()
			return st
		}
	}
	return nil
}

// pick scores the feasible nodes and returns the best, breaking ties at
// random (reservoir sampling, so every best node is equally likely).
func (s *Scheduler) pick(ctx context.Context, state *framework.CycleState, pi *framework.PodInfo, feasible []*framework.NodeInfo) string {
	if len(feasible) == 1 || len(s.o.Profile.Score) == 0 {
		return feasible[0].Name()
	}
	best, bestScore, ties := "", int64(-1), 0
	for _, ni := range feasible {
		var total int64
		for _, sp := range s.o.Profile.Score {
			if v, st := sp.Score(ctx, state, pi, ni); st.IsSuccess() {
				total += v
			}
		}
		switch {
		case total > bestScore:
			best, bestScore, ties = ni.Name(), total, 1
		case total == bestScore:
			ties++
			if s.o.Rand.IntN(ties) == 0 {
				best = ni.Name()
			}
		}
	}
	return best
}

// feasibleToFind is how many feasible nodes a cycle looks for among n,
// given a percentage of nodes to score, as kube-scheduler bounds it.
func feasibleToFind(n, pct int) int {
	if n < 100 || pct >= 100 {
		return n
	}
	if pct <= 0 {
		pct = max(50-n/125, 5)
	}
	return max(n*pct/100, 100)
}

// fitMessage renders the reasons the way kube-scheduler does:
// "0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated
// taint {dedicated: gpu}."
func fitMessage(nodes int, reasons map[string]int) string {
	keys := make([]string, 0, len(reasons))
	for r := range reasons {
		keys = append(keys, r)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, r := range keys {
		parts[i] = fmt.Sprintf("%d %s", reasons[r], r)
	}
	return fmt.Sprintf("0/%d nodes are available: %s.", nodes, strings.Join(parts, ", "))
}

// QueueConfig is the queue configuration for a profile's pods: keyed by
// namespace/name, ordered by priority then enqueue time (PrioritySort),
// gated by the PreEnqueue plugins, woken by the plugins' hints.
func QueueConfig(p framework.Profile) schedq.Config[types.NamespacedName, *v1.Pod] {
	cfg := schedq.Config[types.NamespacedName, *v1.Pod]{
		Key:          framework.Key,
		Group:        framework.GroupName,
		Priority:     framework.Priority,
		Hints:        p.Hints(),
		UpdateEvents: PodUpdateEvents,
		Match:        clusterevent.Match,
	}
	for _, pe := range p.PreEnqueue {
		cfg.PreEnqueue = append(cfg.PreEnqueue, schedq.PreEnqueue[*v1.Pod]{Name: pe.Name(), Admit: pe.PreEnqueue})
	}
	return cfg
}
