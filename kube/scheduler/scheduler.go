// Package scheduler is schedq's Kubernetes scheduler: the scheduling cycle
// (filter, score, pick, assume, bind) over the cache, the failure handling
// that feeds the queue, and the handlers that turn cluster events into
// queue operations. The same code runs against a real API server (see
// api.go) and in the simulator, which supplies its own Binder, Reporter,
// clock and queue in virtual time.
package scheduler

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/plugins"
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
// that lock only the cache's room index and the DRA manager's DeviceClass
// cache (WakeBudgetOn), leaves both, are taken, never the cache's own lock. The scheduling cycle calls no method of the queue
// while it holds the cache's lock: it reads nominations before its view
// and writes them (and requeues) after it.
type Queue interface {
	Add(pod *v1.Pod) error
	Update(oldPod, newPod *v1.Pod) error
	Delete(key types.NamespacedName) error
	Done(a Attempt) error
	Requeue(a Attempt, f schedq.Failure) error
	DoneMembers(a Attempt, placed []int, message string, reasons ...string) error
	Park(pod *v1.Pod, f schedq.Failure) error
	Move(ev schedq.Event, oldObj, newObj any, match func(*schedq.Info[*v1.Pod]) bool) error
	Activate(keys ...types.NamespacedName) error
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
// later (from another goroutine in a real cluster). On the framework path
// pod is the assumed pod, the pod popped with spec.nodeName set to node
// (a shallow copy, read-only like every pod): a binder that keeps the
// bound pod (the simulator) may keep that object, which the cache and
// kube-scheduler's cache then hold already.
//
// Bind calls start (if not nil) just before it sends the binding
// request, and does not send it, calling done(ErrNodeDeleted) instead,
// if start returns false: start checks that the pod is still assumed on
// a node still cached (Cache.StartBinding). A binder that waits before
// sending (APIBinder waits for a binding slot) calls start after its
// wait; one that sends at once calls it first (Started). Every Binder
// has this one method, so that a wrapper cannot hide the guard.
type Binder interface {
	Bind(ctx context.Context, pod *v1.Pod, node string, start func() bool, done func(error))
}

// Started is a Binder's check before it sends a binding: it runs start
// (true if nil) and, if start returns false, calls done(ErrNodeDeleted),
// so that the binder sends nothing. It reports whether the binder may
// send.
func Started(start func() bool, done func(error)) bool {
	if start == nil || start() {
		return true
	}
	done(ErrNodeDeleted)
	return false
}

// Reporter tells the world about attempts: the pod's PodScheduled
// condition and events, in a real cluster. Every Reporter has every
// method, doing nothing where it has nothing to do, so that a wrapper
// cannot hide one.
//
// Unschedulable reports a failed attempt. record is nil unless plugins
// found the pod unschedulable; then it computes the failure record a new
// leader reads (failover.go), which a reporter that keeps records (the
// live cluster's APIReporter) writes with the condition and any other
// ignores (computing it costs a hash of the pod's spec, so it is not
// computed for them). Warn emits a warning event about an object (a pod
// or a PodGroup), for input the scheduler works around; the scheduler's
// log says it in any case, and a reporter without events (the
// simulator's) does nothing.
type Reporter interface {
	Warner
	Unschedulable(ctx context.Context, pod *v1.Pod, reason, message string, record func() FailureRecord)
	Scheduled(ctx context.Context, pod *v1.Pod, node string)
}

// Options configures a Scheduler. Zero fields take the defaults noted.
type Options struct {
	// Profiles are kube-scheduler's frameworks, one per profile
	// (NewProfiles, or profile.NewFrameworkOn for one). Required: at least
	// one; the first is the default profile. Each schedules lone pods and
	// group attempts (fwcycle.go, fwgroup.go) and preempts with its
	// PostFilter plugins (fwpreempt.go); schedq's GangScheduling decides a
	// group's quorum. One framework schedules every pod, whatever its
	// spec.schedulerName, and its metrics carry the Metrics' own profile
	// label; with several, each schedules the pods whose
	// spec.schedulerName is its profile's (profile.Framework.Name), as
	// kube-scheduler's profiles do (profiles.go), and they must share one
	// snapshot (build each but the first with profile.Setup.Alongside the
	// first). New makes the cache track kube-scheduler's cache for the
	// snapshot (Cache.TrackUpstream) and gives each framework the queue's
	// nominations. A profile's percentageOfNodesToScore, if set,
	// overrides PercentageOfNodesToScore for its pods.
	Profiles []*profile.Framework
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
	// SyncPreBind runs the framework's PreBind plugins on the cycle's
	// goroutine, before the binding starts, instead of on one of the
	// binding's own: for the simulator, whose event loop is the only
	// writer of its cluster and answers the plugins' API calls itself.
	SyncPreBind bool
	// Nominations, if set, writes the status.nominatedNodeName of a pod
	// whose PreBind plugins have work before its binding, and clears it
	// if that binding fails and gives the pod back (BindingNominator).
	// Nil: nothing is written (the simulator: docs/simulator.md).
	Nominations BindingNominator
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
	// rejected is fwFilter's scratch list of the nodes it rejected.
	rejected []nodeStatus
	// scores is fwPick's last answer of ScoreNodesInto, its memory
	// reused by the next (keepBatch keeps only the raw scores).
	scores []fwk.NodePluginScores
	// runs is fwFilter's list of the reasons of the nodes it rejected in
	// a cycle that found none (noteRejections), nil if it has none.
	runs []reasonRun
	// profs are the profiles (profiles.go), by name; only is the one
	// profile of Options.Profiles, which schedules every pod, nil with
	// several, which byName holds; cur is the profile
	// of the cycle under way, or of the last one.
	profs  []*fwProfile
	only   *fwProfile
	byName map[string]*fwProfile
	cur    *fwProfile
	// release is gang release (gang_release.go): nil when off.
	release *gangRelease

	// Preemption (preempt_*.go): nil when off.
	pre *preemptor
	// ownNom is the popped pod's nomination (if hasNom), read before the
	// cycle's snapshot.
	ownNom string
	hasNom bool
	// fwNom serves the frameworks the nominations read before the
	// cycle.
	fwNom fwNominator
	// nomHash hashes the nominations in fwNom (nominationsHash), for the
	// failure record.
	nomHash uint64
	// fwCycle numbers the framework path's lone-pod cycles, sig is the
	// current one's pod signature (nil outside such a cycle or if a
	// plugin cannot sign the pod), and batch is what it may reuse of the
	// cycle before (fwbatch.go).
	fwCycle uint64
	sig     fwk.PodSignature
	batch   fwBatch
	// lastPI is the PodInfo the last lone-pod cycle built (podInfo).
	lastPI *framework.PodInfo
	// fwProfile.fmemo keeps filter verdicts per signature and node
	// generation (fwfiltermemo.go); fmemoHits counts the verdicts read
	// from it and fmemoRepeats the failed cycles repeated whole;
	// noFilterMemo turns it off (tests compare with and without).
	fmemoHits, fmemoRepeats uint64
	noFilterMemo            bool
	// inTrial is set while a group attempt places its members in the
	// snapshot (fwPlaceMembers): AssumePod changes a node there without a
	// new generation, so the filter memo, which trusts generations, is
	// not read or written then.
	inTrial bool
	// mismatches are the priorities of the group members warned of a
	// PriorityMismatch (checkPriorities), by UID: the member's, then its
	// group's. Used by the scheduling loop only.
	mismatches map[types.UID][2]int32
	// snapRemovals is the cache's count of node removals as of the
	// cycle's snapshot (upstreamMirror.removals).
	snapRemovals uint64
	// committed says the cycle handed its attempt to bindings: a panic
	// after that point does not requeue it (see recovered).
	committed bool
	// reserving is the binding-to-be of the lone pod whose Reserve and
	// Permit plugins are running (fwCommit), nil otherwise: a panic there
	// gives the pod back as the newest version it holds (see recovered).
	reserving *pendingBinding
	// preBinds are the goroutines running PreBind before a binding
	// (startBinding); Wait waits for them.
	preBinds sync.WaitGroup
}

// New returns a scheduler. It fails if o has no Profiles, a nil one, two
// of one name, or profiles that do not share one snapshot.
func New(q Queue, c *Cache, b Binder, r Reporter, o Options) (*Scheduler, error) {
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
	if err := s.setProfiles(o); err != nil {
		return nil, err
	}
	c.TrackUpstream()
	for _, p := range s.profs {
		p.fw.Framework().SetPodNominator(&s.fwNom)
		p.fw.Framework().SetPodActivator(queueActivator{q: q, log: o.Logger})
	}
	return s, nil
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
	// logged says the failure was logged already (a panic, with its
	// stack), so that fail does not log it again.
	logged bool
}

// ScheduleOne runs the scheduling cycle for a popped pod: filter, score,
// pick a node, assume the pod there and start its binding. A failure goes
// back to the queue: with the rejecting plugins if it was unschedulable, as
// an error otherwise. A panic in the cycle (a plugin's, say) fails that
// attempt only, as an error (see recovered); the scheduler goes on.
func (s *Scheduler) ScheduleOne(ctx context.Context, info Attempt) (out Outcome) {
	start := s.o.Now()
	s.committed = false
	s.reserving = nil
	defer func() {
		if r := recover(); r != nil {
			out = s.recovered(ctx, info, start, s.panicSite(r))
		}
	}()
	return s.scheduleOne(ctx, info)
}

// scheduleOne is ScheduleOne without the recovery.
func (s *Scheduler) scheduleOne(ctx context.Context, info Attempt) Outcome {
	if info.Group != "" {
		return s.scheduleGroup(ctx, info)
	}
	p := s.profileFor(info.Item)
	if p == nil {
		return s.fail(ctx, info, s.o.Now(), Outcome{Result: Error, Message: errNoProfile(info.Item)})
	}
	s.use(p)
	return s.scheduleFramework(ctx, info)
}

// fail requeues a failed attempt and reports it.
func (s *Scheduler) fail(ctx context.Context, info Attempt, start time.Time, out Outcome) Outcome {
	pod := info.Item
	f := schedq.Failure{Message: out.Message, Reasons: out.Reasons}
	reason := "SchedulerError"
	if out.Result == Unschedulable {
		f.RejectedBy, f.WaitingOn = out.Plugins, out.Pending
		reason = v1.PodReasonUnschedulable
	}
	if out.Result == Error && !out.logged {
		s.o.Logger.Error("scheduling attempt failed", "pod", framework.Key(pod), "err", out.Message)
	}
	s.o.Metrics.attempt(s.label(pod), out.Result, s.o.Now().Sub(start))
	if err := s.queue.Requeue(info, f); err != nil {
		s.o.Logger.Debug("requeue after failed attempt", "pod", framework.Key(pod), "err", err)
	}
	s.report(ctx, pod, reason, out)
	return out
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

// QueueConfig is the queue configuration of the scheduler's pods: keyed
// by namespace/name, ordered by priority then enqueue time (as
// kube-scheduler's PrioritySort), grouped by PodGroup, with the hints of
// schedq's GangScheduling. UseFrameworkHints adds the framework's
// plugins' hints and gates; call it before the queue is built.
func QueueConfig() schedq.Config[types.NamespacedName, *v1.Pod] {
	gang := plugins.GangScheduling{}
	return schedq.Config[types.NamespacedName, *v1.Pod]{
		Key:          framework.Key,
		Group:        framework.GroupName,
		Priority:     framework.Priority,
		Hints:        map[string][]schedq.EventHint[*v1.Pod]{gang.Name(): gang.EventsToRegister()},
		UpdateEvents: PodUpdateEvents,
		Match:        clusterevent.Match,
	}
}
