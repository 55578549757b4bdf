package scheduler

import (
	"context"
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
// it, and then calls done with the failures (a victim already gone is not
// one; a nomination that could not be cleared is not one either: it is
// logged). done may run on another goroutine. Preempt is called by the
// scheduling loop with no lock of the scheduler held, in the order the
// preemptions were decided.
type Evictor interface {
	Preempt(ctx context.Context, p Preemption, done func(errs []error))
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
	// MinCandidateNodesPercentage and MinCandidateNodesAbsolute bound how
	// many candidate nodes a search looks for before it picks one, as
	// kube-scheduler's DefaultPreemption arguments (defaults 10 and 100).
	MinCandidateNodesPercentage int
	MinCandidateNodesAbsolute   int
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

// forget forgets victims whose eviction failed in part.
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
// it before the first cycle. On the framework path (Options.Framework)
// the profile's PostFilter plugins decide (fwpreempt.go), with the
// profile's DefaultPreemption args: o's MinCandidateNodes fields are
// not read.
func (s *Scheduler) EnablePreemption(o PreemptionOptions) error {
	if o.Evictor == nil {
		return fmt.Errorf("preemption: no Evictor")
	}
	s.pre = &preemptor{o: o, running: map[types.UID]bool{}, evicting: map[types.UID]time.Time{}}
	if s.o.Framework != nil {
		if pl := s.o.Framework.Preemption(); pl != nil {
			s.usePreemption(pl)
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

// nominatedPods returns, per node, the pods nominated there that pod must
// leave room for: those of its priority or higher, not itself. Nil when
// none. O(m) for m nominated pods.
func (s *Scheduler) nominatedPods(pod *v1.Pod) map[string][]*framework.PodInfo {
	nom := s.queue
	targets := nom.NominatedTargets()
	if len(targets) == 0 {
		return nil
	}
	prio, key := framework.Priority(pod), framework.Key(pod)
	var out map[string][]*framework.PodInfo
	for _, node := range targets {
		for _, p := range nom.Nominated(node) {
			if framework.Priority(p) < prio || framework.Key(p) == key {
				continue
			}
			pi, err := framework.NewPodInfo(p)
			if err != nil {
				continue
			}
			if out == nil {
				out = map[string][]*framework.PodInfo{}
			}
			out[node] = append(out[node], pi)
		}
	}
	return out
}

// readNominations reads, before the cycle takes the cache's read lock,
// what it needs of the queue's nominations: the pods nominated per node
// that pod must leave room for, and pod's own nomination. The cycle never
// calls the queue under the cache's lock (see the lock order on Cache).
func (s *Scheduler) readNominations(key types.NamespacedName, pod *v1.Pod) {
	s.nomPods = s.nominatedPods(pod)
	s.ownNom, s.hasNom = s.queue.Nomination(key)
}

// forgetNominations drops what readNominations read, so that nothing is
// pinned between cycles.
func (s *Scheduler) forgetNominations() {
	s.nomPods, s.ownNom, s.hasNom = nil, "", false
}

// place finds a node for pi: its nominated node first, if it still fits
// there, then every node; if none fits and preemption is on, it plans a
// preemption, which out carries for act to start outside the cache's lock.
// It runs under the cache's read lock and calls nothing of the queue: the
// nominations were read before (readNominations), and a nomination to
// clear is carried in out (clearNom) to be cleared after.
func (s *Scheduler) place(ctx context.Context, pi *framework.PodInfo, snap framework.Snapshot) Outcome {
	node, ok, gone := s.tryNominated(ctx, pi, snap)
	if ok {
		return Outcome{Result: Scheduled, Node: node}
	}
	out := s.findNode(ctx, pi, snap)
	if gone {
		out.clearNom = "nominated node is gone"
	}
	if out.Result == Unschedulable && s.pre != nil {
		s.planPreemption(ctx, pi, snap, &out)
	}
	return out
}

// tryNominated returns the node the pod is nominated to if it passes the
// filters there; gone says the nominated node no longer exists.
func (s *Scheduler) tryNominated(ctx context.Context, pi *framework.PodInfo, snap framework.Snapshot) (node string, ok, gone bool) {
	if !s.hasNom {
		return "", false, false
	}
	ni, ok := snap.Node(s.ownNom)
	if !ok {
		return "", false, true
	}
	state, filters, st := s.preFilter(ctx, pi, snap)
	if !st.IsSuccess() {
		return "", false, false
	}
	if !s.filterNominated(ctx, filters, state, pi, ni).IsSuccess() {
		return "", false, false
	}
	return s.ownNom, true, false
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

// preFilter runs the PreFilter plugins and returns the cycle state and
// the filters to run; a status other than success says the pod fits
// nowhere.
func (s *Scheduler) preFilter(ctx context.Context, pi *framework.PodInfo, snap framework.Snapshot) (*framework.CycleState, []framework.FilterPlugin, *framework.Status) {
	state := framework.NewCycleState()
	filters := s.o.Profile.Filter
	for _, pf := range s.o.Profile.PreFilter {
		st := pf.PreFilter(ctx, state, pi, snap)
		if st.IsSkip() {
			filters = s.without(filters, pf.Name())
			continue
		}
		if !st.IsSuccess() {
			st.Plugin = pf.Name()
			return nil, nil, st
		}
	}
	return state, filters, nil
}

// filterNominated runs the filters on ni as it will be once the pods
// nominated there that outrank pi take their room: with them, and, as
// kube-scheduler does, without them too (a filter such as affinity may
// pass only thanks to them).
func (s *Scheduler) filterNominated(ctx context.Context, filters []framework.FilterPlugin, state *framework.CycleState, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	extra := s.nomPods[ni.Name()]
	if len(extra) == 0 {
		return filter(ctx, filters, state, pi, ni)
	}
	ni.CopyInto(&s.nomNode, nil)
	for _, p := range extra {
		s.nomNode.AddPod(p)
	}
	if st := filter(ctx, filters, state, pi, &s.nomNode); !st.IsSuccess() {
		return st
	}
	return filter(ctx, filters, state, pi, ni)
}

// assumed drops the nomination of a pod the cache now counts on its node,
// so that its room is not counted twice while the binding is under way.
func (s *Scheduler) assumed(key types.NamespacedName) {
	if _, ok := s.queue.Nomination(key); ok {
		s.clearNomination(key, "assumed on a node")
	}
}
