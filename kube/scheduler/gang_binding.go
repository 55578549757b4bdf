package scheduler

import (
	"context"
	"fmt"
	"sync"

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
	}
	g.end(ctx)
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
	if g.pending > 0 || len(g.retries) == 0 {
		g.mu.Unlock()
		return
	}
	retries, bound := g.retries, g.before+g.bound
	g.retries = nil
	g.mu.Unlock()

	s := g.s
	below := bound < g.minCount
	summary := fmt.Sprintf("group %s: %d of minCount %d bound", g.group, bound, g.minCount)
	if below {
		summary += " (below minCount)"
	}
	s.o.Logger.Warn("group binding: members failed to bind and go back to the queue with their group",
		"group", g.group, "bound", bound, "minCount", g.minCount, "failed", len(retries), "belowMinCount", below)
	for _, r := range retries {
		msg := fmt.Sprintf("%s; binding this member failed: %v; it is retried with its group", summary, r.err)
		s.reporter.Unschedulable(ctx, r.info.Item, "SchedulerError", msg)
		if err := s.giveBack(r.info, schedq.Failure{Message: msg}); err != nil {
			s.o.Logger.Debug("requeue after group binding failure", "pod", framework.Key(r.info.Item), "err", err)
		}
	}
}
