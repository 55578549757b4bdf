package sim

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/scheduler"
)

// ForecastBase is the cluster of a ForecastState (its namespaces, nodes
// and running pods) built once into a scheduler cache, from which the
// forward runs of that state start (ForecastOptions.Base) instead of
// building it each time: building is what a run of a large cluster
// spends most on (every bound pod converted for kube-scheduler's cache).
// Each run takes the base for itself, and gives it back rolled back to
// the state as built (scheduler.Cache.Rollback): what a run places,
// preempts or ends never reaches the base or another run. Runs on one
// base take turns; it is safe for concurrent use. A base whose rollback
// fails, or whose run panicked, is built again at its next run.
//
// Lock order: mu is held for a whole run (take to give), and under it
// only the run's own cache and scheduler, and the run's Pace, which may
// block and take its caller's locks (the live scheduler's queue): no one
// may take mu while holding a lock that Pace takes. st, uids and pods
// never change after NewForecastBase and are read without mu.
type ForecastBase struct {
	st    *ForecastState
	mu    sync.Mutex                       // see Lock order above
	cache *scheduler.Cache                 // nil: to build again
	uids  map[types.UID]bool               // of the running pods
	pods  map[types.NamespacedName]*v1.Pod // the running pods, by key
}

// NewForecastBase builds st's cluster. It fails as a forecast of st
// would: a state without nodes, a running pod whose UID is empty or not
// unique, or on a node that is not in the state. O(nodes + running pods).
func NewForecastBase(st *ForecastState) (*ForecastBase, error) {
	b := &ForecastBase{st: st}
	c, seen, pods, err := b.build()
	if err != nil {
		return nil, err
	}
	b.cache, b.uids, b.pods = c, seen, pods
	return b, nil
}

// build fills a cache with st's cluster, as a fresh run's handlers do,
// and marks it, and returns it with the running pods' UIDs and the pods
// by key. A fresh run's queue is empty while they do, so their move
// requests change nothing and are left out. It writes nothing of b:
// uids and pods, set once by NewForecastBase, are read without the lock.
func (b *ForecastBase) build() (*scheduler.Cache, map[types.UID]bool, map[types.NamespacedName]*v1.Pod, error) {
	st := b.st
	if len(st.Nodes) == 0 {
		return nil, nil, nil, ErrNoNodes
	}
	c := scheduler.NewCache()
	c.TrackUpstream() // as scheduler.New does, before any object
	for _, ns := range st.Namespaces {
		c.SetNamespace(ns)
	}
	nodes := make(map[string]bool, len(st.Nodes))
	for _, n := range st.Nodes {
		nodes[n.Name] = true
		c.AddNode(n)
	}
	seen := uids{own: make(map[types.UID]bool, len(st.Running))}
	pods := make(map[types.NamespacedName]*v1.Pod, len(st.Running))
	for _, rp := range st.Running {
		p := rp.Pod
		if err := checkRunning(p, seen, nodes[p.Spec.NodeName]); err != nil {
			return nil, nil, nil, err
		}
		pods[framework.Key(p)] = p
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue // the handlers ignore a pod that ended
		}
		_ = c.AddPod(p) // an error is the handlers' warning: the pod is left out
	}
	c.Mark()
	return c, seen.own, pods, nil
}

// of reports whether st has the base's cluster: the same instant and the
// same lists of namespaces, nodes and running pods.
func (b *ForecastBase) of(st *ForecastState) bool {
	return st.Now.Equal(b.st.Now) && sameList(st.Namespaces, b.st.Namespaces) &&
		sameList(st.Nodes, b.st.Nodes) && sameList(st.Running, b.st.Running)
}

func sameList[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// take gives a run the base's cache, built again if need be; the run
// gives it back with give.
func (b *ForecastBase) take() (*scheduler.Cache, error) {
	b.mu.Lock()
	if b.cache == nil {
		c, _, _, err := b.build()
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		b.cache = c
	}
	return b.cache, nil
}

// give rolls the cache back for the next run, or drops it to be built
// again if broken (a run that panicked may have left a write half done,
// which a rollback would not undo) or if the rollback fails.
func (b *ForecastBase) give(broken bool) {
	defer b.mu.Unlock()
	if broken || b.cache.Rollback() != nil {
		b.cache = nil
	}
}
