package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// Releaser deletes the bound members of a gang that stays below its
// minCount, so that their controllers recreate them and the gang is
// scheduled whole. done gets the errors, one per member that could not be
// deleted (a member already gone is no error). Wait returns once the
// releases started so far have ended (done called); the owner of a
// scheduler calls it when the scheduler's term ends.
type Releaser interface {
	Release(ctx context.Context, group string, members []*v1.Pod, reason string, done func(errs []error))
	Wait()
}

// GangReleaseOptions turn gang release on (EnableGangRelease).
type GangReleaseOptions struct {
	// Releaser deletes the members. Required.
	Releaser Releaser
	// After is how long a gang may stay below its minCount, counted from
	// the first attempt that failed to complete it, before its bound
	// members are released at its next failed attempt. Default
	// DefaultGangReleaseAfter.
	After time.Duration
}

// DefaultGangReleaseAfter is GangReleaseOptions.After's default.
const DefaultGangReleaseAfter = 30 * time.Second

// gangRelease tracks the gangs below their minCount. Safe for concurrent
// use: releases end on the releaser's goroutines, and the PodGroup
// handler forgets deleted groups (Cache.forgetRelease). mu is a leaf,
// taken with no other lock held. An entry of below or warned lasts while
// its gang is short and its PodGroup exists; one of releasing, while its
// release runs.
type gangRelease struct {
	o GangReleaseOptions

	mu        sync.Mutex
	below     map[string]time.Time // group -> first failed attempt below minCount
	releasing map[string]bool
	warned    map[string]bool // groups told they cannot be released
}

// EnableGangRelease turns gang release on: a gang with bound members but
// fewer than its minCount, whose missing members still do not fit After
// its first failed attempt to complete it, has its bound members deleted
// (by o.Releaser) if each has a controller to recreate it, and is then
// scheduled whole. A gang with a member no controller owns is never
// released: a warning says so once. Call it before the first cycle.
func (s *Scheduler) EnableGangRelease(o GangReleaseOptions) error {
	if o.Releaser == nil {
		return errors.New("gang release: Releaser is required")
	}
	if o.After <= 0 {
		o.After = DefaultGangReleaseAfter
	}
	s.release = &gangRelease{o: o, below: map[string]time.Time{}, releasing: map[string]bool{}, warned: map[string]bool{}}
	s.cache.release.Store(s.release)
	return nil
}

// forget forgets the gang group, whose PodGroup was deleted. A release
// under way keeps its entry in releasing, which its end removes. O(1).
func (r *gangRelease) forget(group string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.below, group)
	delete(r.warned, group)
}

// forgetIfDeleted forgets a's gang if its PodGroup was deleted while the
// attempt ran: the PodGroup handler forgot the gang (after the queue
// deleted the group) before afterFailure noted it again. Its members then
// wait in the queue for their PodGroup (InIncomplete), or are gone.
// O(members).
func (s *Scheduler) forgetIfDeleted(a Attempt) {
	for _, m := range a.Members {
		if _, loc, ok := s.queue.Get(m.Key); ok && loc != schedq.InIncomplete {
			return
		}
	}
	s.release.forget(a.Group)
}

// completed forgets a gang whose attempt succeeded.
func (r *gangRelease) completed(group string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.below, group)
	delete(r.warned, group)
}

// afterFailure is called after a group attempt failed with before members
// bound or assumed (before the attempt). A gang below its minCount, with
// some bound, past the grace period and not already being released, is
// released, unless it is short only because its minCount was raised
// (Cache.scaledUp); its entity is in the queue already, requeued by the failure,
// and the deletions wake it. An attempt that failed before it counted
// them (beforeUnknown: a panic, no profile, no snapshot) changes nothing:
// taken for 0 bound, it made gang release forget when the gang first
// failed, and the grace period started again.
func (s *Scheduler) afterFailure(ctx context.Context, a Attempt, before int) {
	if before == beforeUnknown {
		return
	}
	r := s.release
	if r == nil || before == 0 || before >= a.Spec.MinCount || s.cache.scaledUp(a.Group, before) {
		r.completed(a.Group)
		return
	}
	defer s.forgetIfDeleted(a)
	now := s.o.Now()
	r.mu.Lock()
	first, seen := r.below[a.Group]
	if !seen {
		r.below[a.Group] = now
	}
	due := seen && now.Sub(first) >= r.o.After && !r.releasing[a.Group]
	r.mu.Unlock()
	if !due {
		return
	}
	// Members deleted already (by an earlier release, say) are going: the
	// cache leaves them out.
	bound, inFlight := s.cache.GroupMembers(a.Group)
	if inFlight > 0 || len(bound) == 0 {
		return // bindings under way: the next failure decides
	}
	reason := fmt.Sprintf("group %s: %d of minCount %d bound for %v and the rest do not fit; its bound members are deleted so that it is scheduled whole",
		a.Group, len(bound), a.Spec.MinCount, now.Sub(first).Round(time.Second))
	for _, p := range bound {
		if metav1.GetControllerOf(p) == nil {
			s.cannotRelease(ctx, a, p, len(bound))
			return
		}
	}
	r.mu.Lock()
	r.releasing[a.Group] = true
	r.mu.Unlock()
	s.o.Logger.Warn("releasing a gang below its minCount", "group", a.Group, "bound", len(bound), "minCount", a.Spec.MinCount)
	r.o.Releaser.Release(ctx, a.Group, bound, reason, func(errs []error) {
		r.mu.Lock()
		delete(r.releasing, a.Group)
		delete(r.below, a.Group)
		r.mu.Unlock()
		if len(errs) > 0 {
			s.o.Logger.Warn("releasing a gang: some members were not deleted", "group", a.Group, "errors", len(errs), "first", errs[0])
		}
	})
}

// cannotRelease says, once per gang, why a gang below its minCount keeps
// its bound members: one of them has no controller to recreate it.
func (s *Scheduler) cannotRelease(ctx context.Context, a Attempt, p *v1.Pod, bound int) {
	r := s.release
	r.mu.Lock()
	warned := r.warned[a.Group]
	r.warned[a.Group] = true
	r.mu.Unlock()
	if warned {
		return
	}
	msg := fmt.Sprintf("group %s: %d of minCount %d bound and the rest do not fit; its bound member %s has no controller to recreate it, so schedq does not delete the bound members: delete them to have the gang scheduled whole",
		a.Group, bound, a.Spec.MinCount, framework.Key(p))
	s.o.Logger.Warn("gang below its minCount is not released", "group", a.Group, "pod", framework.Key(p), "bound", bound, "minCount", a.Spec.MinCount)
	s.reporter.Warn(ctx, p, "GangBelowMinCount", msg)
}
