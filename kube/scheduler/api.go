package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
)

// APIBinder binds through the pods/binding subresource, each binding in its
// own goroutine so that the next cycle does not wait for the API server. At
// most Parallelism bindings are in flight at once: when they are all busy,
// Bind waits for a slot, which holds the scheduling loop back instead of
// piling up goroutines, assumed pods and requests the API server would
// only queue.
type APIBinder struct {
	Client  kubernetes.Interface
	Timeout time.Duration // per binding; default 30s
	// Stamp, if set, gives the term each binding is made under, read just
	// before its request is built; false: not stamped. An admission
	// policy on the API server refuses a stamped binding whose term is
	// not the Lease's current one (docs/security.md).
	Stamp   func() (LeaseStamp, bool)
	slots   chan struct{}
	running sync.WaitGroup
}

// DefaultBindParallelism bounds the bindings in flight.
const DefaultBindParallelism = 32

// NewAPIBinder returns a binder with at most parallelism bindings in
// flight (DefaultBindParallelism if 0).
func NewAPIBinder(client kubernetes.Interface, parallelism int) *APIBinder {
	if parallelism <= 0 {
		parallelism = DefaultBindParallelism
	}
	return &APIBinder{Client: client, slots: make(chan struct{}, parallelism)}
}

// Bind implements Binder: start (if not nil) runs in the binding's
// goroutine just before the request, once a slot is free, so that a node
// deleted while the binding waited for its slot is not bound. done runs
// after the slot is given back, so a slow failure report does not hold a
// binding slot.
func (b *APIBinder) Bind(ctx context.Context, pod *v1.Pod, node string, start func() bool, done func(error)) {
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		done(ctx.Err())
		return
	}
	timeout := b.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	b.running.Add(1)
	go func() {
		defer b.running.Done()
		if start != nil && !start() {
			<-b.slots
			done(ErrNodeDeleted)
			return
		}
		bctx, cancel := context.WithTimeout(ctx, timeout)
		binding := &v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: node},
		}
		if b.Stamp != nil {
			if st, ok := b.Stamp(); ok {
				binding.Annotations, binding.Labels = st.annotations(), st.labels()
			}
		}
		err := b.Client.CoreV1().Pods(pod.Namespace).Bind(bctx, binding, metav1.CreateOptions{})
		cancel()
		if err != nil && answerLost(err) && b.madeAnyway(ctx, pod, node) {
			err = nil
		}
		<-b.slots
		done(err)
	}()
}

// answerLost reports whether a binding that failed with err may have been
// made all the same: no answer (the connection dropped, the request timed
// out), or a server error that can come after the write (a 504, etcd's
// "request timed out" as a 500).
func answerLost(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return !errors.Is(err, context.Canceled)
	}
	return status.Status().Code >= 500
}

// madeAnyway asks the API server whether pod (the same UID) is bound to
// node: a binding whose answer was lost is then a binding made. A read,
// so the fence lets it through; it is skipped once ctx is done (the term
// ended: the next one reads the pods from the informers).
func (b *APIBinder) madeAnyway(ctx context.Context, pod *v1.Pod, node string) bool {
	if ctx.Err() != nil {
		return false
	}
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := b.Client.CoreV1().Pods(pod.Namespace).Get(gctx, pod.Name, metav1.GetOptions{})
	return err == nil && got.UID == pod.UID && got.Spec.NodeName == node
}

// Wait waits for the bindings in flight to end.
func (b *APIBinder) Wait() { b.running.Wait() }

// APIReporter sets the PodScheduled condition and emits events, as
// kube-scheduler does: FailedScheduling (Warning) and Scheduled (Normal).
type APIReporter struct {
	Client   kubernetes.Interface
	Recorder events.EventRecorder
	Logger   *slog.Logger
	Now      func() time.Time
}

// Unschedulable implements Reporter. The condition is patched from the
// scheduling loop, before the pod can be tried again, so that a late patch
// can never overwrite a later binding; an unchanged condition is not
// patched again. With a record, the failure record goes in
// FailureAnnotation, written by the same patch; it is rewritten only with
// the condition or when the rejecting plugins change, so that it stays
// the record of the condition's failure.
func (r APIReporter) Unschedulable(ctx context.Context, pod *v1.Pod, reason, message string, record func() FailureRecord) {
	var rec *FailureRecord
	if record != nil {
		fr := record()
		rec = &fr
	}
	r.report(ctx, pod, reason, message, rec)
}

func (r APIReporter) report(ctx context.Context, pod *v1.Pod, reason, message string, rec *FailureRecord) {
	r.Recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", note(message))
	if r.unchanged(pod, reason, message, rec) {
		return
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	// The UID is a precondition: a pod recreated under the same name is
	// not touched.
	meta := map[string]any{"uid": pod.UID}
	if rec != nil {
		value, err := json.Marshal(rec)
		if err != nil {
			r.log().Error("failure record", "err", err)
			return
		}
		meta["annotations"] = map[string]string{FailureAnnotation: string(value)}
	}
	probe := metav1.NewTime(now())
	patch, err := json.Marshal(map[string]any{
		"metadata": meta,
		"status": map[string]any{
			"conditions": []v1.PodCondition{{
				Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: message,
				LastTransitionTime: transitionTime(pod, probe), LastProbeTime: probe,
				ObservedGeneration: pod.Generation,
			}},
		},
	})
	if err != nil {
		r.log().Error("status patch", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = r.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		r.log().Warn("could not set PodScheduled=False", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}

// noteLimit is the longest note, in bytes, the events API accepts.
const noteLimit = 1024

// note is message cut to fit an event's note: a longer one is cut at a
// character boundary and ends in "...", since the API server refuses the
// whole event otherwise. The PodScheduled condition keeps the message.
func note(message string) string {
	if len(message) <= noteLimit {
		return message
	}
	cut := noteLimit - len("...")
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + "..."
}

// transitionTime is the lastTransitionTime of pod's PodScheduled=False
// condition: kept if the pod is PodScheduled=False already (only the
// reason or message changes), now otherwise.
func transitionTime(pod *v1.Pod, now metav1.Time) metav1.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime
		}
	}
	return now
}

// unchanged reports whether pod already carries this condition and, if
// rec is set, a record with the same plugins.
func (r APIReporter) unchanged(pod *v1.Pod, reason, message string, rec *FailureRecord) bool {
	same := false
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == reason && c.Message == message {
			same = true
		}
	}
	if !same || rec == nil {
		return same
	}
	old, ok := parseRecord(pod)
	return ok && slices.Equal(old.plugins, rec.Plugins)
}

// Scheduled implements Reporter. The binding itself sets PodScheduled=True.
func (r APIReporter) Scheduled(ctx context.Context, pod *v1.Pod, node string) {
	r.Recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding",
		"Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
}

func (r APIReporter) log() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}
