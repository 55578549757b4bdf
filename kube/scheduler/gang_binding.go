package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// gangBinds tallies the bindings of one successful group attempt. The
// members placed by the attempt are bound in parallel; a member whose
// binding fails is not requeued at once but once every binding of the
// attempt has ended, so that its failure message (Explain, its event)
// says how many of the group ended up bound against its minCount. The
// failed members then go back to the queue as failed members: they rejoin
// their group's entity and are retried with it (see docs/gangs.md).
// Safe for concurrent use: bindings end on the binder's goroutines.
type gangBinds struct {
	s        *Scheduler
	group    string
	minCount int
	before   int // members bound or assumed before the attempt

	mu      sync.Mutex
	pending int     // bindings not ended yet
	bound   int     // bindings that bound their member
	dropped int     // bindings that ended without a retry, not bound
	doubt   int     // bindings left in doubt (their term ended first)
	retries []retry // members to requeue once all have ended
}

// retry is a member whose binding failed.
type retry struct {
	info Attempt
	err  error
}

func newGangBinds(s *Scheduler, group string, minCount, before, placed int) *gangBinds {
	return &gangBinds{s: s, group: group, minCount: minCount, before: before, pending: placed}
}

// expect sets how many bindings the attempt starts. It is called before
// any of them can end: under the cache's lock, as the members become
// assumptions, since an abort may end one as soon as that lock is free.
func (g *gangBinds) expect(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending = n
}

// settle records a binding that ended without a retry: bound, or dropped
// (the member was deleted, bound by someone else, or its namespace is
// going away).
func (g *gangBinds) settle(ctx context.Context, bound bool) {
	g.mu.Lock()
	if bound {
		g.bound++
	} else {
		g.dropped++
	}
	g.end(ctx)
}

// inDoubt records a binding left in doubt (Scheduler.keepInDoubt): its
// term ended before the API server's answer came. It counts as ended:
// the binder is done with it, its term's queue is discarded, and what
// settles it (the pod informer, or a read of the next term's:
// Handlers.SettleInDoubt) never reports to this tally. Left pending, it
// kept the tally from ever ending, and the members whose bindings failed
// held as retrying for good (Cache.retrying): the next term's queue,
// rebuilt from the informer, takes them in all the same, while the hold
// still explained them as waiting for their group's bindings
// (Cache.HeldApart) and kept the ended term's scheduler in memory. The
// member in doubt keeps its room in the cache, so the next term's
// attempt of its group counts it as placed until it is settled.
func (g *gangBinds) inDoubt(ctx context.Context) {
	g.mu.Lock()
	g.doubt++
	g.end(ctx)
}

// memberFailed ends the failed binding of a group member: retried with
// its group (retry) if held, that is if the cache still held its
// assumption when it was forgotten (forgetToRetry); otherwise the informer
// has shown the member deleted or replaced meanwhile, and its binding
// ends without a retry.
func (s *Scheduler) memberFailed(ctx context.Context, info Attempt, pb *pendingBinding, held bool, err error) {
	if !held {
		s.o.Logger.Debug("group binding: the member was deleted or replaced while it was bound; not retried", "pod", framework.Key(info.Item), "err", err)
		pb.gang.settle(ctx, false)
		return
	}
	pb.gang.retry(ctx, pb.current(info), err)
}

// memberCancelled ends, in its attempt's tally, a group member's binding
// cancelled but not left in doubt: the cache no longer assumed the member
// when its term ended (the informer showed it bound, deleted or replaced
// first), or its term goes on (a plugin's cancellation). The member is
// counted bound if the cache places it, else ended as a failed binding
// (memberFailed: retried with its group if still held). Before, such a
// binding ended without a word to the tally, which then never ended: the
// members whose bindings had failed stayed held to retry for good.
func (s *Scheduler) memberCancelled(ctx context.Context, info Attempt, pb *pendingBinding, held bool, err error) {
	if _, onNode := s.cache.NodeOf(framework.Key(info.Item)); onNode {
		s.cache.unretry(info.Item)
		pb.gang.settle(ctx, true)
		return
	}
	s.memberFailed(ctx, info, pb, held, err)
}

// retry records a binding that failed: its member is requeued once every
// binding of the attempt has ended.
func (g *gangBinds) retry(ctx context.Context, info Attempt, err error) {
	g.mu.Lock()
	g.retries = append(g.retries, retry{info: info, err: err})
	g.end(ctx)
}

// end counts one binding as ended, with g.mu held, and unlocks it. The
// last one reports the failed members and requeues them.
func (g *gangBinds) end(ctx context.Context) {
	g.pending--
	if g.pending > 0 {
		g.mu.Unlock()
		return
	}
	retries, bound, dropped, doubt := g.retries, g.before+g.bound, g.dropped, g.doubt
	g.retries = nil
	g.mu.Unlock()
	if len(retries) == 0 {
		g.droppedBelow(bound, dropped, doubt)
		return
	}

	s := g.s
	below := bound+doubt < g.minCount
	summary := fmt.Sprintf("group %s: %d of minCount %d bound", g.group, bound, g.minCount)
	if doubt > 0 {
		summary += fmt.Sprintf(", %d in doubt (the term ended before the API server answered)", doubt)
	}
	if below {
		summary += " (below minCount)"
	}
	s.o.Logger.Warn("group binding: members failed to bind and go back to the queue with their group",
		"group", g.group, "bound", bound, "minCount", g.minCount, "failed", len(retries), "dropped", dropped, "inDoubt", doubt, "belowMinCount", below)
	msgs := make([]string, len(retries))
	for i, r := range retries {
		msgs[i] = fmt.Sprintf("%s; binding this member failed: %v; it is retried with its group", summary, r.err)
		if s.cache.retryHeld(r.info.Item, g) { // not deleted, replaced or bound meanwhile
			s.reporter.Unschedulable(ctx, r.info.Item, "SchedulerError", msgs[i], nil)
		}
	}
	if g.giveBack(retries, msgs) > 0 {
		g.wake()
	}
}

// droppedBelow says, in the log, that a group attempt's bindings ended
// with the group below its minCount and no member to give back: those not
// bound were deleted, replaced or bound by someone else meanwhile, or
// their namespace is going away. A controller's new pod for a deleted
// member completes the group (or, if it does not fit, has it released:
// docs/gangs.md); nothing else does. The members left in doubt (doubt)
// may be bound: they count towards minCount here, as the next term's
// cache counts them until they are settled.
func (g *gangBinds) droppedBelow(bound, dropped, doubt int) {
	if dropped == 0 || bound+doubt >= g.minCount {
		return
	}
	g.s.o.Logger.Warn("group binding ended below minCount: members were deleted, replaced or bound elsewhere while they were bound, and none goes back to the queue",
		"group", g.group, "bound", bound, "minCount", g.minCount, "dropped", dropped, "inDoubt", doubt)
}

// EventGroupMemberRetry moves a group parked when its members whose
// bindings failed join it (gangBinds.wake): a wildcard, so the group
// backs off and is tried again, whatever plugins rejected its other
// members.
var EventGroupMemberRetry = schedq.Event{Kind: schedq.AnyKind, Action: schedq.AnyAction, Label: "GroupMemberRetry"}

// wake moves the group's entity out of the parking area, after its
// backoff, if the failed members given back found it parked there: parked
// on the plugins that rejected its other members, whose events need have
// nothing to do with the failed ones, which fit before their bindings
// failed. The gang may be below minCount meanwhile. O(parked entities).
func (g *gangBinds) wake() {
	ours := func(info *schedq.Info[*v1.Pod]) bool { return framework.GroupName(info.Item) == g.group }
	if err := g.s.queue.Move(EventGroupMemberRetry, nil, nil, ours); err != nil && !errors.Is(err, schedq.ErrClosed) {
		g.s.o.Logger.Debug("move after group binding failure", "group", g.group, "err", err)
	}
}

// giveBack gives the failed members of a group attempt back to
// the queue, with their messages, holding the pod events' lock, so that no
// pod handler runs between the check that a member is still held as
// retrying (Cache.takeRetry) and its Park: a member that the informer has
// shown deleted, replaced, or bound since its binding failed is not given
// back. Given back, it would stay queued for good (the informer's event
// found nothing to take out of the queue), and its group's next attempt
// would count it towards minCount. It returns how many it gave back.
func (g *gangBinds) giveBack(retries []retry, msgs []string) (n int) {
	s := g.s
	s.cache.lockEvents()
	defer s.cache.unlockEvents()
	for i, r := range retries {
		key := framework.Key(r.info.Item)
		latest, held := s.cache.takeRetry(r.info.Item, g)
		if !held {
			s.o.Logger.Debug("group binding: a failed member was deleted, replaced or bound meanwhile; not retried", "pod", key)
			continue
		}
		if latest != nil {
			r.info.Item = latest // updated while it was held
		}
		if err := s.giveBack(r.info, schedq.Failure{Message: msgs[i]}); err != nil {
			s.o.Logger.Debug("requeue after group binding failure", "pod", key, "err", err)
			continue
		}
		n++
	}
	return n
}
