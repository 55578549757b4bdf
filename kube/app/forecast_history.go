package app

import (
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq/kube/sim"
)

// historyMax is how many runtimes the live history keeps: the latest.
const historyMax = 10_000

// HistoryOptions are how the forecasts learn runtimes from past pods
// (sim.History). Zero: by controller, then owner kind and namespace, the
// longest run past
// the estimate's end.
type HistoryOptions struct {
	// Labels group the runtimes by these labels' values, coarsest first:
	// a pod is estimated from the finest class with enough runs (see
	// sim.History). A pod without the first label falls back to its
	// controller, then its owner kind and namespace.
	Labels []string
	// Tail names sim.History.Tail: "longest" (or empty) or "exponential".
	Tail string
	// File keeps the runtimes learnt across restarts (see
	// historyFile): loaded by Options.LoadHistory (Validate), written every
	// historyWriteEvery when they changed and at shutdown. Empty: the
	// history starts empty at each start.
	File string

	loaded *loadedHistory // what LoadHistory read from File
}

// Validate returns every problem, each naming its flag (--history-label,
// --history-tail), joined; for the commands that share the flags.
func (o HistoryOptions) Validate() error {
	return errors.Join(o.validate(flagName)...)
}

// validate returns every problem, each naming its source by name(flag):
// the flag, or the field of the file that set it.
func (o HistoryOptions) validate(name func(flag string) string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, l := range o.Labels {
		if msgs := validation.IsQualifiedName(l); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a label key: %s", name("history-label"), l, msgs[0]))
		} else if seen[l] {
			errs = append(errs, fmt.Errorf("%s: %q is listed twice", name("history-label"), l))
		}
		seen[l] = true
	}
	if _, err := sim.ParseHistoryTail(o.Tail); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name("history-tail"), err))
	}
	return errs
}

// load reads File into o, once: for Options.LoadHistory, before anything
// connects. Without File, nothing.
func (o *HistoryOptions) load() error {
	if o.File == "" || o.loaded != nil {
		return nil
	}
	l, err := loadHistoryFile(o.File)
	if err != nil {
		return err
	}
	o.loaded = l
	return nil
}

// liveHistory learns the runtimes of this scheduler's pods from the pod
// informer, for the forecasts of pods that declare none: a pod that
// succeeds or fails ran from its status.startTime to its containers' last
// finish; a pod deleted while running ran at least until its deletion (a
// censored runtime, sim.History.ObserveRunning). It keeps
// the latest historyMax runtimes, and gives each forecast a sim.History of
// them. Safe for concurrent use.
type liveHistory struct {
	schedulerName string
	profiles      []string // liveState.profiles: every profile's pods count
	clock         clock.PassiveClock
	opts          HistoryOptions // valid

	mu sync.Mutex
	// runs are the latest runtimes, oldest first, the slot of a run
	// replaced by its pod's later one dead (pod nil) until it is
	// dropped; first is the sequence number of runs[0], and each run's
	// is first plus its index.
	runs  []observed
	first uint64
	dead  int                  // dead slots in runs
	byUID map[types.UID]uint64 // the sequence number of each pod's run
	gen   uint64               // counts the changes to runs
}

type observed struct {
	pod *v1.Pod // only what sim.History.Kind reads: labels, owners, namespace; and the UID
	d   time.Duration
	cut bool      // deleted while running, or running when the file was written: it would have run longer
	at  time.Time // when it was observed
}

// handler is the pod informer's event handler that feeds the history.
func (h *liveHistory) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			// A pod that ended while no scheduler watched: its run is
			// learnt only if the file kept it as censored (running at
			// the write), and then it ends as one finished run.
			if p, ok := obj.(*v1.Pod); ok && terminal(p) && h.censored(p.UID) {
				h.observe(p, finishedAt(p, h.clock.Now()), false)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*v1.Pod)
			p, ok2 := newObj.(*v1.Pod)
			if ok1 && ok2 && !terminal(old) && terminal(p) {
				h.observe(p, finishedAt(p, h.clock.Now()), false)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*v1.Pod); ok && !terminal(p) && p.Spec.NodeName != "" {
				h.observe(p, h.clock.Now(), true)
			}
		},
	}
}

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// finishedAt is the last finish of p's containers, or now if none says.
func finishedAt(p *v1.Pod, now time.Time) time.Time {
	var last time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if last.IsZero() {
		return now
	}
	return last
}

// observe records that p, of this scheduler and started, ended at end;
// cut says it was deleted while running.
// O(1).
func (h *liveHistory) observe(p *v1.Pod, end time.Time, cut bool) {
	if !ours(h.schedulerName, h.profiles, p.Spec.SchedulerName) || p.Status.StartTime == nil {
		return
	}
	d := end.Sub(p.Status.StartTime.Time)
	if d <= 0 {
		return
	}
	kind := &v1.Pod{}
	kind.Namespace, kind.Labels, kind.OwnerReferences, kind.UID = p.Namespace, p.Labels, p.OwnerReferences, p.UID
	h.add(observed{kind, d, cut, h.clock.Now()})
}

// add keeps o as the latest run, in place of the run of the same pod
// (UID) if there is one: a pod running when the file was written and
// seen finishing after a restart is one finished run, not a censored one
// and a finished one, and its run is the latest, as if it had been
// recorded when it finished, not at the censored run's place. It drops
// the oldest runs past historyMax. O(1) amortised.
func (h *liveHistory) add(o observed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	uid := o.pod.UID
	if h.byUID == nil {
		h.byUID = map[types.UID]uint64{}
	}
	if seq, ok := h.byUID[uid]; ok && uid != "" {
		h.runs[seq-h.first] = observed{}
		h.dead++
	}
	if uid != "" {
		h.byUID[uid] = h.first + uint64(len(h.runs))
	}
	h.runs = append(h.runs, o)
	h.trim()
}

// trim drops the oldest runs past historyMax and the dead slots before
// the oldest kept, and compacts runs once most of its slots are dead.
// The caller holds the lock.
func (h *liveHistory) trim() {
	for len(h.runs) > 0 && (len(h.runs)-h.dead > historyMax || h.runs[0].pod == nil) {
		if front := h.runs[0]; front.pod == nil {
			h.dead--
		} else if uid := front.pod.UID; uid != "" && h.byUID[uid] == h.first {
			delete(h.byUID, uid)
		}
		h.runs[0] = observed{}
		h.runs = h.runs[1:]
		h.first++
	}
	if h.dead > len(h.runs)/2 {
		h.compact()
	}
}

// compact removes the dead slots of runs, numbering the runs again.
// O(runs); the caller holds the lock.
func (h *liveHistory) compact() {
	live := make([]observed, 0, len(h.runs)-h.dead)
	for _, o := range h.runs {
		if o.pod == nil {
			continue
		}
		if uid := o.pod.UID; uid != "" {
			h.byUID[uid] = h.first + uint64(len(live))
		}
		live = append(live, o)
	}
	h.runs, h.dead = live, 0
}

// censored reports whether the run kept of the pod uid is censored.
func (h *liveHistory) censored(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	seq, ok := h.byUID[uid]
	return ok && uid != "" && h.runs[seq-h.first].cut
}

// kept returns a copy of the runs kept, oldest first, and the count of
// changes they reflect. O(historyMax) under the lock, no I/O.
func (h *liveHistory) kept() ([]observed, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]observed, 0, len(h.runs)-h.dead)
	for _, o := range h.runs {
		if o.pod != nil {
			out = append(out, o)
		}
	}
	return out, h.gen
}

// history returns a sim.History of the runtimes kept. O(historyMax).
func (h *liveHistory) history() *sim.History { return h.historyOf(nil) }

// historyOf is history for a forecast of a state whose running pods (by
// UID) are running: their censored runs (loaded from the file, written
// while they ran) are left out, since the forecast adds each running pod
// as a censored run of the time it has run by now, and one pod is one
// run. O(historyMax).
func (h *liveHistory) historyOf(running map[types.UID]bool) *sim.History {
	out := sim.NewHistory(h.opts.Labels...)
	out.Tail, _ = sim.ParseHistoryTail(h.opts.Tail)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.runs {
		if o.pod == nil {
			continue // replaced by a later run
		}
		if o.cut && running[o.pod.UID] {
			continue // the forecast counts it, as it runs now
		}
		if o.cut {
			out.ObserveRunning(o.pod, o.d)
		} else {
			out.Observe(o.pod, o.d)
		}
	}
	return out
}
