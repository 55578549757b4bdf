package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// Evictor carries out a preemption without holding the scheduling cycle
// back: it records the preemptor's nominated node (status.nominatedNodeName
// in a real cluster), clears the nominations of the pods that lost theirs
// to it, marks each victim with the DisruptionTarget condition, deletes
// it, and then calls done with the failures: each victim it could not
// evict as a *VictimError, so that those it did evict still count as
// leaving (an error that is no VictimError names no victim: none of them
// counts as leaving then, nor was any nomination written or cleared). A
// victim already gone is no failure. A nomination of Unnominated that
// could not be cleared is reported as a *NominationError, and the
// preemption goes on; the preemptor's that could not be written is
// logged only. done may run on another
// goroutine. Preempt is called by the scheduling loop with no lock of
// the scheduler held, in the order the preemptions were decided. Wait
// returns once the preemptions started so far have ended (done called);
// the owner of a scheduler calls it when the scheduler's term ends.
type Evictor interface {
	Preempt(ctx context.Context, p Preemption, done func(errs []error))
	Wait()
}

// VictimError is an Evictor's failure to evict Victim.
type VictimError struct {
	Victim *v1.Pod
	Err    error
}

// Error implements error.
func (e *VictimError) Error() string {
	return fmt.Sprintf("evict %s/%s: %v", e.Victim.Namespace, e.Victim.Name, e.Err)
}

// Unwrap returns the cause.
func (e *VictimError) Unwrap() error { return e.Err }

// NominationError is an Evictor's failure to clear Pod's
// status.nominatedNodeName, Pod being one of a Preemption's Unnominated:
// the scheduler gives Pod its nomination back in the queue, so that the
// queue and the status agree.
type NominationError struct {
	Pod *v1.Pod
	Err error
}

// Error implements error.
func (e *NominationError) Error() string {
	return fmt.Sprintf("clear the nomination of %s/%s: %v", e.Pod.Namespace, e.Pod.Name, e.Err)
}

// Unwrap returns the cause.
func (e *NominationError) Unwrap() error { return e.Err }

// victimErrors returns errs, an Evictor's failures, but the
// *NominationErrors: the failures that concern the victims (and an
// error that names nothing). O(errors).
func victimErrors(errs []error) []error {
	var out []error
	for _, err := range errs {
		if ne := (*NominationError)(nil); !errors.As(err, &ne) {
			out = append(out, err)
		}
	}
	return out
}

// uncleared returns the pods of unnominated whose status errs, an
// Evictor's failures, say was not cleared: those a *NominationError
// names, or all of them if an error names nothing (neither a victim nor
// a pod: nothing was done). O(pods + errors).
func uncleared(unnominated []*v1.Pod, errs []error) []*v1.Pod {
	failed := map[types.UID]bool{}
	for _, err := range errs {
		var ve *VictimError
		var ne *NominationError
		switch {
		case errors.As(err, &ne) && ne.Pod != nil:
			failed[ne.Pod.UID] = true
		case errors.As(err, &ve) && ve.Victim != nil:
		default:
			return unnominated
		}
	}
	var out []*v1.Pod
	for _, u := range unnominated {
		if failed[u.UID] {
			out = append(out, u)
		}
	}
	return out
}

// unevicted returns the victims that errs, an Evictor's failures, say
// were not evicted: those a *VictimError names, or all of them if an
// error names none. O(victims + errors).
func unevicted(victims []*v1.Pod, errs []error) []*v1.Pod {
	failed := make(map[types.UID]bool, len(errs))
	for _, err := range errs {
		var ve *VictimError
		if !errors.As(err, &ve) || ve.Victim == nil {
			return victims
		}
		failed[ve.Victim.UID] = true
	}
	var out []*v1.Pod
	for _, v := range victims {
		if failed[v.UID] {
			out = append(out, v)
		}
	}
	return out
}

// Preemption is one preemption for the Evictor to carry out.
type Preemption struct {
	// Preemptor is nominated to Node.
	Preemptor *v1.Pod
	Node      string
	// Victims are the pods to evict from Node.
	Victims []*v1.Pod
	// Unnominated are the pods of lower priority than Preemptor that were
	// nominated to Node: they lost that nomination in the queue and can
	// no longer count on the room, so their status.nominatedNodeName is
	// cleared too, as kube-scheduler does.
	Unnominated []*v1.Pod
}

// PreemptionOptions turns preemption on (see EnablePreemption).
type PreemptionOptions struct {
	// Evictor deletes the victims. Required.
	Evictor Evictor
	// Budgets lists the PodDisruptionBudgets to respect where possible,
	// from an informer in a real cluster. Nil: none.
	Budgets func() []*policyv1.PodDisruptionBudget
	// Metrics records attempts and victims. Nil records nothing.
	Metrics *PreemptionMetrics
}

// preemptor is the scheduler's preemption state: the options and the
// preemptors whose victims are still being evicted, which do not preempt
// again meanwhile. running is written by Evictor's done, from any
// goroutine.
//
// evicting holds the victims handed to the Evictor, by UID, with the time
// they were: until the cache shows them terminating or gone (the
// informer lags behind the Evictor), the search counts them as leaving,
// as terminating pods, so that the next preemptor does not evict more
// for room that is already being freed. An entry ends when a search sees
// the pod terminating, or after evictionMemory. mu is a leaf lock.
type preemptor struct {
	o        PreemptionOptions
	mu       sync.Mutex
	running  map[types.UID]bool
	evicting map[types.UID]time.Time
}

// evictionMemory bounds how long a victim counts as leaving before the
// cache shows it so.
const evictionMemory = time.Minute

// evict records victims as handed to the Evictor at now, and forgets the
// entries older than evictionMemory. O(victims + entries).
func (p *preemptor) evict(victims []*v1.Pod, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, at := range p.evicting {
		if now.Sub(at) > evictionMemory {
			delete(p.evicting, uid)
		}
	}
	for _, v := range victims {
		p.evicting[v.UID] = now
	}
}

// leaving returns a copy of the victims being evicted, nil if none, for
// one search to read without the lock.
func (p *preemptor) leaving() map[types.UID]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.evicting) == 0 {
		return nil
	}
	return maps.Clone(p.evicting)
}

// forget forgets victims whose eviction failed.
func (p *preemptor) forget(victims []*v1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range victims {
		delete(p.evicting, v.UID)
	}
}

// seen forgets a victim the cache shows terminating.
func (p *preemptor) seen(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.evicting, uid)
}

// EnablePreemption makes the scheduler preempt lower-priority pods for a
// pod that fits nowhere, as kube-scheduler's DefaultPreemption does. Call
// it before the first cycle. The framework profile's PostFilter plugins
// decide (fwpreempt.go), with the profile's DefaultPreemption args; a
// profile without DefaultPreemption does not preempt.
func (s *Scheduler) EnablePreemption(o PreemptionOptions) error {
	if o.Evictor == nil {
		return fmt.Errorf("preemption: no Evictor")
	}
	s.pre = &preemptor{o: o, running: map[types.UID]bool{}, evicting: map[types.UID]time.Time{}}
	for _, p := range s.profs {
		if pl := p.fw.Preemption(); pl != nil {
			p.pre = s.usePreemption(p.fw, pl)
		}
	}
	return nil
}

func (p *preemptor) isRunning(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running[uid]
}

func (p *preemptor) setRunning(uid types.UID, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.running[uid] = true
	} else {
		delete(p.running, uid)
	}
}

// clearNomination drops key's nomination in the queue (only there: the
// pod's status is the Evictor's) and reports whether it did; why is
// logged.
func (s *Scheduler) clearNomination(key types.NamespacedName, why string) bool {
	if err := s.queue.Nominate(key, ""); err != nil {
		s.o.Logger.Debug("clear nomination", "pod", key, "err", err)
		return false
	}
	s.o.Logger.Debug("nomination cleared", "pod", key, "why", why)
	return true
}

// assumed drops the nomination of pod, which the cache now counts on
// node, so that its room is not counted twice while the binding is under
// way; not that of a pod created again under its name meanwhile
// (unnominateAs). A nomination to another node kept room there from the
// pods of pod's priority or lower: they are woken for it
// (nominationFreed), as when preemption gives a nomination up.
func (s *Scheduler) assumed(pod *v1.Pod, node string) {
	key := framework.Key(pod)
	if _, ok := s.queue.Nomination(key); !ok {
		return
	}
	if nom, ok := s.unnominateAs(key, pod.UID, "assumed on a node"); ok && nom != node {
		s.nominationFreed(pod, nom)
	}
}

// endNomination drops the nomination of pod, whose attempt failed in a
// way after which kube-scheduler clears a nomination (why says which):
// its search for a node failed with an error, it could not be assumed
// on the node its cycle chose, was rejected there at Reserve or Permit,
// or fit nowhere with no PostFilter plugin to run. It wakes the pods its room kept out (nominationFreed). Kept
// after a failure on the chosen node, it would send every later attempt
// to the nominated node first (taken without a search when its filters
// pass), to be rejected there again. Not that of a pod created again
// under its name meanwhile (unnominateAs).
func (s *Scheduler) endNomination(pod *v1.Pod, why string) {
	key := framework.Key(pod)
	if _, ok := s.queue.Nomination(key); !ok {
		return
	}
	if nom, ok := s.unnominateAs(key, pod.UID, why); ok {
		s.nominationFreed(pod, nom)
	}
}
