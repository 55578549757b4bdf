package scheduler

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
)

// APIEvictor carries out preemptions against the API server, each in its
// own goroutine: it sets the preemptor's status.nominatedNodeName, clears
// that of the pods that lost their nomination to it, then for each victim
// adds the DisruptionTarget condition, records a Preempted event and
// deletes the pod, with its UID as a precondition so that a pod recreated
// under the same name is not touched. A victim already gone counts as
// evicted; one that could not be deleted is reported as a *VictimError.
// A nomination that cannot be written or cleared is logged, not retried
// (as the PodScheduled condition), and does not fail the preemption; a
// clearing is also reported, as a *NominationError. The
// writes of one pod's nomination are ordered (nomWrites): the last
// decided is the one left. It also writes the nominations of bindings
// whose PreBind has work, and clears them after such a binding fails
// (BindingNominator), in the same order. Safe for concurrent use.
type APIEvictor struct {
	Client   kubernetes.Interface
	Recorder events.EventRecorder // nil: no events
	Logger   *slog.Logger
	// SchedulerName is named in the victims' condition message if the
	// preemptor names no scheduler: the preemptor's profile is, as
	// kube-scheduler names it (several profiles: Options.Profiles).
	SchedulerName string
	// GracePeriodSeconds, if set, overrides the victims' own grace period.
	GracePeriodSeconds *int64
	// Timeout bounds each request; default 30s.
	Timeout time.Duration
	running sync.WaitGroup
	clears  inFlight
	noms    nomWrites
}

// Preempt implements Evictor. The nominations are claimed here, in the
// order of the calls, and written in the goroutine.
func (e *APIEvictor) Preempt(ctx context.Context, p Preemption, done func(errs []error)) {
	nom := e.noms.claim(p.Preemptor.UID)
	clears := make([]nomClaim, len(p.Unnominated))
	for i, u := range p.Unnominated {
		clears[i] = e.noms.claim(u.UID)
	}
	e.running.Add(1)
	go func() {
		defer e.running.Done()
		var errs []error
		pre := p.Preemptor
		if err := e.noms.write(ctx, nom, func() error { return e.nominate(ctx, pre, p.Node) }); err != nil {
			// The queue keeps the nomination, which protects the room
			// the victims free, as kube-scheduler keeps it in its
			// nominator when the status update fails.
			e.log().Warn("could not write status.nominatedNodeName", "pod", pre.Namespace+"/"+pre.Name,
				"node", p.Node, "err", err)
		}
		for i, u := range p.Unnominated {
			if err := e.noms.write(ctx, clears[i], func() error { return e.nominate(ctx, u, "") }); err != nil {
				// The scheduler gives the pod its nomination back in the
				// queue: the status keeps it.
				e.log().Warn("could not clear status.nominatedNodeName", "pod", u.Namespace+"/"+u.Name,
					"node", p.Node, "preemptor", pre.Namespace+"/"+pre.Name, "err", err)
				errs = append(errs, &NominationError{Pod: u, Err: err})
			}
		}
		for _, v := range p.Victims {
			if err := e.evict(ctx, pre, p.Node, v); err != nil {
				errs = append(errs, &VictimError{Victim: v, Err: err})
			}
		}
		done(errs)
	}()
}

// Wait waits for the preemptions under way to end, and for the
// clearings of nominations after failed bindings (ClearAfterBinding).
func (e *APIEvictor) Wait() {
	e.running.Wait()
	e.clears.wait()
}

// inFlight counts goroutines that may be started while its wait runs
// (a sync.WaitGroup forbids an Add from zero concurrent with Wait): wait
// returns once the count is zero, counting those started meanwhile. The
// zero value is ready; safe for concurrent use; mu is a leaf lock.
type inFlight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n falls to zero
}

func (f *inFlight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.zero = make(chan struct{})
	}
	f.n++
}

func (f *inFlight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 {
		close(f.zero)
	}
}

func (f *inFlight) wait() {
	for {
		f.mu.Lock()
		if f.n == 0 {
			f.mu.Unlock()
			return
		}
		zero := f.zero
		f.mu.Unlock()
		<-zero
	}
}

func (e *APIEvictor) timeout() time.Duration {
	if e.Timeout == 0 {
		return 30 * time.Second
	}
	return e.Timeout
}

func (e *APIEvictor) log() *slog.Logger {
	if e.Logger == nil {
		return slog.Default()
	}
	return e.Logger
}

// nominate patches status.nominatedNodeName to node ("" clears it). A pod
// deleted since, or replaced by one of the same name, is no failure:
// there is nothing left to nominate.
func (e *APIEvictor) nominate(ctx context.Context, pod *v1.Pod, node string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   map[string]any{"nominatedNodeName": node},
	})
	if err != nil {
		return err
	}
	return e.patchStatus(ctx, pod, patch)
}

func (e *APIEvictor) patchStatus(ctx context.Context, pod *v1.Pod, patch []byte) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()
	_, err := e.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or replaced by a pod of the same name
	}
	return err
}

// evict marks victim as a disruption target and deletes it. The
// condition failing to apply does not stop the deletion.
func (e *APIEvictor) evict(ctx context.Context, preemptor *v1.Pod, node string, victim *v1.Pod) error {
	now := metav1.Now()
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": victim.UID},
		"status": map[string]any{"conditions": []v1.PodCondition{{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler,
			Message:            e.nameOf(preemptor) + ": preempting to accommodate a higher priority pod",
			LastTransitionTime: now,
		}}},
	})
	if err != nil {
		return err
	}
	if err := e.patchStatus(ctx, victim, patch); err != nil {
		e.log().Warn("could not add the DisruptionTarget condition", "pod", victim.Namespace+"/"+victim.Name, "err", err)
	}
	if e.Recorder != nil {
		e.Recorder.Eventf(victim, preemptor, v1.EventTypeNormal, "Preempted", "Preempting",
			"Preempted by pod %s on node %s", preemptor.UID, node)
	}
	dctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()
	uid := victim.UID
	err = e.Client.CoreV1().Pods(victim.Namespace).Delete(dctx, victim.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid}, GracePeriodSeconds: e.GracePeriodSeconds,
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // already gone, or a new pod of the same name: not ours to delete
	}
	return err
}

// nameOf is the scheduler named in the condition of preemptor's victims:
// its profile's, else SchedulerName.
func (e *APIEvictor) nameOf(preemptor *v1.Pod) string {
	if preemptor != nil && preemptor.Spec.SchedulerName != "" {
		return preemptor.Spec.SchedulerName
	}
	return e.SchedulerName
}

// NominateForBinding implements BindingNominator: the decision is
// claimed now, in order with the preemptions' (nomWrites), and written
// by the returned function, in the caller's goroutine.
func (e *APIEvictor) NominateForBinding(pod *v1.Pod, node string) func(ctx context.Context) error {
	c := e.noms.claim(pod.UID)
	return func(ctx context.Context) error {
		return e.noms.write(ctx, c, func() error { return e.nominate(ctx, pod, node) })
	}
}

// ClearAfterBinding implements BindingNominator: the clearing is claimed
// now and written in a goroutine that Wait waits for. Nothing once ctx
// is done: the term ended, and its successor reads the pod's status as
// it finds it. It may be called from the informer's goroutine (a node
// deleted under a binding) while the term's Wait runs, so its goroutines
// are counted apart (clears), not by running, whose Adds come from the
// scheduling loop only, before Wait.
func (e *APIEvictor) ClearAfterBinding(ctx context.Context, pod *v1.Pod, node string) {
	if ctx.Err() != nil {
		return
	}
	c := e.noms.claim(pod.UID)
	e.clears.add()
	go func() {
		defer e.clears.done()
		if err := e.noms.write(ctx, c, func() error { return e.nominate(ctx, pod, "") }); err != nil {
			e.log().Warn("could not clear status.nominatedNodeName after a failed binding", "pod", pod.Namespace+"/"+pod.Name,
				"node", node, "err", err)
		}
	}()
}
