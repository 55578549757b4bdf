package scheduler

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/plugins"
)

// Warner emits a warning event about an object (a pod or a PodGroup), for
// input the scheduler works around: part of every Reporter (APIReporter's
// emits an event; the simulator's does nothing, and the log says it), and
// the Handlers' Events.
type Warner interface {
	Warn(ctx context.Context, obj runtime.Object, reason, message string)
}

// beforeUnknown is groupTry.before for an attempt that failed before it
// counted the members bound or assumed (afterFailure).
const beforeUnknown = -1

// groupTry is what a group attempt found in its trial.
type groupTry struct {
	before   int   // members bound or assumed before the attempt
	placed   []int // indexes into Attempt.Members
	nodes    []string
	pbs      []*pendingBinding // the placed members' bindings
	failed   []Outcome         // of the members not placed, in member order
	failedAt []int             // the index into Attempt.Members of each of failed (-1: no one member's)
	tried    int
	plugins  []string
	pending  []string // the plugins that left a member Pending
	// erred is 1 + the index into failed of the member whose Error (not
	// Unschedulable) stopped the trial and fails the group; 0 if none.
	erred    int
	verdict  framework.Quorum
	head     string // the group's part of its members' messages (groupOutcome, memberMessages)
	state    clusterState
	bindings *gangBinds
	// fitsNowhere is the members that fit nowhere, for the PostFilter
	// plugins run if the attempt fails (fwGroupPostFilter).
	fitsNowhere []fwUnplaced
}

// scheduleGroup runs a group attempt on the framework
// (scheduleGroupFramework): the members are placed one by one, in the
// order the queue gives them, each placement counting for the next
// members. If GangScheduling says the quorum is met, the placements
// become assumptions and the members are bound in parallel; the members
// that did not fit go back with the group (DoneMembers). If not, nothing
// is placed and the group goes back to the queue with the plugins that
// rejected its members.
func (s *Scheduler) scheduleGroup(ctx context.Context, a Attempt) Outcome {
	p, msg := s.groupProfile(a)
	if p == nil {
		return s.failGroup(ctx, a, s.o.Now(), &groupTry{before: beforeUnknown}, Outcome{Result: Error, Message: msg})
	}
	s.use(p)
	s.checkPriorities(ctx, a)
	return s.scheduleGroupFramework(ctx, a, s.groupPlugin())
}

// groupPlugin is the plugin that decides a group attempt's quorum:
// schedq's GangScheduling (kube-scheduler's own is off with
// GenericWorkload).
func (s *Scheduler) groupPlugin() framework.GroupPlugin { return plugins.GangScheduling{} }

// fail records that the member a.Members[i] was not placed (i -1: a
// failure of the trial as a whole).
func (g *groupTry) fail(i int, out Outcome) {
	g.failed = append(g.failed, out)
	g.failedAt = append(g.failedAt, i)
	for _, p := range out.Plugins {
		if !slices.Contains(g.plugins, p) {
			g.plugins = append(g.plugins, p)
		}
	}
	for _, p := range out.Pending {
		if !slices.Contains(g.pending, p) {
			g.pending = append(g.pending, p)
		}
	}
}

// memberAttempt is a placed member as its binding sees it: outside any
// attempt (Cycle 0), so that a failed binding puts it back as a failed
// member of its group (giveBack parks it).
func memberAttempt(m Attempt) Attempt {
	m.Cycle = 0
	return m
}

// giveBack returns a failed attempt to the queue: a member's, which no Pop
// returned (memberAttempt), is parked as failed; any other is requeued.
func (s *Scheduler) giveBack(a Attempt, f schedq.Failure) error {
	if a.Cycle == 0 {
		return s.queue.Park(a.Item, f)
	}
	return s.queue.Requeue(a, f)
}

// The reasons (Outcome.Reasons) a group attempt adds to its members':
// its quorum, which failed it.
const (
	// ReasonGroupTooFew is the reason of a group with too few members to
	// reach its minCount, even if all of them fit.
	ReasonGroupTooFew = "fewer group members than minCount"
	// ReasonGroupQuorum is the reason of a group whose members that fit
	// (with those bound before) are fewer than its minCount.
	ReasonGroupQuorum = "fewer group members fit than minCount"
)

// groupErrorOutcome is the outcome of a group attempt that a member's
// error failed (groupTry.erred): an Error, which sends the group to the
// error backoff, as kube-scheduler fails a pod group cycle in which a
// member's scheduling returns an error (neither success nor a rejection).
// Every member is reported with it, as kube-scheduler reports the others
// with the group's error (groupTry.head stays empty).
func (s *Scheduler) groupErrorOutcome(a Attempt, g *groupTry) Outcome {
	m := g.failed[g.erred-1]
	who := "a member"
	if i := g.failedAt[g.erred-1]; i >= 0 {
		who = "member " + framework.Key(a.Members[i].Item).String()
	}
	msg := fmt.Sprintf("group %s: scheduling %s failed, so the group is not scheduled: %s", a.Group, who, m.Message)
	return Outcome{Result: Error, Message: msg, state: g.state}
}

// groupOutcome says why a group attempt failed. Its Reasons are the
// distinct reasons of the members that did not fit, sorted, then the
// quorum's (ReasonGroupTooFew or ReasonGroupQuorum) if it failed the
// attempt; its Message says how many fit and the first failed member's
// message (memberMessage gives each member its own).
func (s *Scheduler) groupOutcome(a Attempt, g *groupTry) Outcome {
	out := Outcome{Result: Unschedulable, Plugins: slices.Clone(g.plugins), Pending: slices.Clone(g.pending), state: g.state}
	head := fmt.Sprintf("group %s: %d of %d members fit (%d bound before), minCount %d",
		a.Group, len(g.placed), len(a.Members), g.before, a.Spec.MinCount)
	tooFew := g.before+len(a.Members) < a.Spec.MinCount
	if tooFew {
		// Too few members to make it, even if they all fit.
		head = fmt.Sprintf("group %s: %d members waiting and %d bound, fewer than minCount %d",
			a.Group, len(a.Members), g.before, a.Spec.MinCount)
	}
	out.Message = head
	if len(g.failed) > 0 {
		out.Message += ": " + g.failed[0].Message
	}
	out.Reasons = g.failedReasons()
	switch {
	case tooFew || len(out.Plugins) > 0:
		// The quorum failed the attempt, alone or with the plugins that
		// rejected members: the group plugin's hints (a member arriving,
		// its PodGroup's minCount lowered, during the attempt too) may let
		// it through as well as theirs.
		out.Plugins = append(out.Plugins, s.groupPlugin().Name())
		if tooFew {
			out.Reasons = append(out.Reasons, ReasonGroupTooFew)
		} else {
			out.Reasons = append(out.Reasons, ReasonGroupQuorum)
		}
	default:
		out.Result = Error
	}
	g.head = head
	return out
}

// failedReasons returns the distinct reasons of the members that were
// not placed, sorted. O(reasons log reasons).
func (g *groupTry) failedReasons() []string {
	var out []string
	for _, f := range g.failed {
		for _, r := range f.Reasons {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}

// memberMessages returns the messages of the failed group attempt out for
// its n members, in member order: the group's head (how many fit,
// minCount) and, for a member that did not fit, its own failure, as
// kube-scheduler gives each member that did not fit its own FitError; a
// member that fit, or was not tried, gets the group's message. Without a
// head (an error, or an attempt that failed before its trial) every
// member gets the group's message. O(n + failed).
func (g *groupTry) memberMessages(n int, out Outcome) []string {
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = out.Message
	}
	if g.head == "" {
		return msgs
	}
	for j, i := range g.failedAt {
		if i >= 0 && i < n {
			msgs[i] = g.head + ": " + g.failed[j].Message
		}
	}
	return msgs
}

// failGroup requeues a failed group attempt with its rejecting plugins
// and reports each member.
func (s *Scheduler) failGroup(ctx context.Context, a Attempt, start time.Time, g *groupTry, out Outcome) Outcome {
	f := schedq.Failure{Message: out.Message, Reasons: out.Reasons}
	reason := "SchedulerError"
	if out.Result == Unschedulable {
		f.RejectedBy, f.WaitingOn = out.Plugins, out.Pending
		reason = "Unschedulable"
	}
	s.o.Metrics.memberAttempts(s.groupLabel(a), out.Result, len(a.Members), s.o.Now().Sub(start))
	s.o.Metrics.groupAttempt(s.groupLabel(a), out.Result)
	if err := s.queue.Requeue(a, f); err != nil {
		s.o.Logger.Debug("requeue after failed group attempt", "group", a.Group, "err", err)
	}
	if out.Result == Error && !out.logged {
		s.o.Logger.Error("group scheduling attempt failed", "group", a.Group, "members", len(a.Members), "err", out.Message)
	}
	s.o.Logger.Debug("group attempt failed", "group", a.Group, "members", len(a.Members), "placed", len(g.placed), "minCount", a.Spec.MinCount, "message", out.Message)
	msgs := g.memberMessages(len(a.Members), out)
	for i, m := range a.Members {
		mo := out
		mo.Message = msgs[i]
		s.report(ctx, m.Item, reason, mo)
	}
	s.afterFailure(ctx, a, g.before)
	return out
}

// bindGroup ends a successful group attempt: the queue learns which
// members were placed, then the placed members are bound in parallel.
func (s *Scheduler) bindGroup(ctx context.Context, a Attempt, start time.Time, g *groupTry) Outcome {
	s.committed = true // the placements are assumptions now
	// Placed members count as pods' attempts once their bindings end.
	s.o.Metrics.memberAttempts(s.groupLabel(a), Unschedulable, len(a.Members)-len(g.placed), s.o.Now().Sub(start))
	s.o.Metrics.groupAttempt(s.groupLabel(a), Scheduled)
	if g.before+len(g.placed) >= a.Spec.MinCount {
		s.release.completed(a.Group)
	}
	var err error
	s.cache.lockEvents()
	s.updatedInFlight(a, g)
	freed := s.nominatedElsewhere(a, g)
	if len(g.placed) == len(a.Members) {
		err = s.queue.Done(a)
	} else {
		// The leftovers go back with why they did not fit, not with the
		// quorum's reason: it was met.
		left := s.groupOutcome(a, g)
		err = s.queue.DoneMembers(a, g.placed, left.Message, g.failedReasons()...)
	}
	s.cache.unlockEvents()
	if err != nil {
		s.o.Logger.Debug("end of group attempt", "group", a.Group, "err", err)
	}
	for _, n := range freed {
		s.nominationFreed(n.pod, n.node)
	}
	// A member forgotten since the trial (its node or itself deleted) is
	// not bound: StartBinding refuses it, and its binding ends once,
	// through the abort or as not sent.
	for j, i := range g.placed {
		if fb := g.pbs[j].fw; fb != nil {
			s.activateStashed(fb.state) // the end of the member's successful scheduling cycle
		}
		s.startBinding(ctx, memberAttempt(a.Members[i]), g.nodes[j], g.pbs[j], start)
	}
	return Outcome{Result: Scheduled, Node: fmt.Sprintf("%d members of group %s", len(g.placed), a.Group)}
}

// nomination is a pod's nomination to node.
type nomination struct {
	pod  *v1.Pod
	node string
}

// nominatedElsewhere returns the nominations of the placed members to
// other nodes than their placements: the queue drops them as the attempt
// ends, and the room each kept from the pods of its member's priority or
// lower is then free (nominationFreed), as for a lone pod assumed
// elsewhere (Scheduler.assumed). A nomination to the member's own node
// ends with its room taken. The caller holds the pod events' lock, so
// that the queue's members are the attempt's. O(placed members).
func (s *Scheduler) nominatedElsewhere(a Attempt, g *groupTry) []nomination {
	var out []nomination
	for j, i := range g.placed {
		m := a.Members[i]
		if node, ok := s.queue.Nomination(m.Key); ok && node != g.nodes[j] {
			out = append(out, nomination{m.Item, node})
		}
	}
	return out
}

// updatedInFlight hands the updates of the placed members that the queue
// recorded during the attempt (before they were assumed; since, the pod
// handlers give them to the binding: Cache.seenPending) to their
// bindings, which give back the newest version if they fail
// (pendingBinding.current): the queue forgets the placed members as the
// attempt ends. An update the binding holds already is newer and stays.
// The caller holds the pod events' lock up to the attempt's end in the
// queue, so that no update reaches the queue in between, where it would
// queue a member whose binding is under way. O(placed members).
func (s *Scheduler) updatedInFlight(a Attempt, g *groupTry) {
	for j, i := range g.placed {
		m := a.Members[i]
		info, _, ok := s.queue.Get(m.Key)
		if ok && info.Item != m.Item && info.Item.UID == m.Item.UID {
			g.pbs[j].latest.CompareAndSwap(nil, info.Item)
		}
	}
}

// abortedMember handles a placed member whose node was deleted before its
// binding started: the cache has forgotten it; it is retried with its group.
func (s *Scheduler) abortedMember(ctx context.Context, m Attempt, g *gangBinds) {
	s.o.Metrics.binding(bindingNodeDeleted, 0)
	g.retry(ctx, m, ErrNodeDeleted)
}

// maxMismatches bounds Scheduler.mismatches: past it the map is emptied,
// and a member still mismatched is warned once more at its group's next
// attempt.
const maxMismatches = 4096

// checkPriorities warns about members whose priority is not their group's.
// The queue orders the group by the PodGroup's priority only; schedq goes
// on and schedules such members (kube-scheduler refuses the group), and
// says so in the log and in an event on the pod: once per member and
// pair of priorities, not at every attempt of its group (a pod's priority
// cannot change, its PodGroup's can). O(members).
func (s *Scheduler) checkPriorities(ctx context.Context, a Attempt) {
	for _, m := range a.Members {
		p := framework.Priority(m.Item)
		if p == a.Spec.Priority {
			delete(s.mismatches, m.Item.UID)
			continue
		}
		pair := [2]int32{p, a.Spec.Priority}
		if w, ok := s.mismatches[m.Item.UID]; ok && w == pair {
			continue
		}
		if s.mismatches == nil || len(s.mismatches) >= maxMismatches {
			s.mismatches = map[types.UID][2]int32{}
		}
		s.mismatches[m.Item.UID] = pair
		msg := fmt.Sprintf("pod priority %d differs from its group %s's priority %d; the group's priority orders the group", p, a.Group, a.Spec.Priority)
		s.o.Logger.Warn("group member priority mismatch", "pod", framework.Key(m.Item), "group", a.Group, "podPriority", p, "groupPriority", a.Spec.Priority)
		s.reporter.Warn(ctx, m.Item, "PriorityMismatch", msg)
	}
}
