package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq/kube/scheduler"
)

// The scheduling loop's backoff while bindings fail because the API
// server is unavailable: doubling from minOutageDelay up to
// maxOutageDelay, so that progress resumes within about two seconds of the
// server being back.
const (
	minOutageDelay = 100 * time.Millisecond
	maxOutageDelay = 2 * time.Second
)

// outageBackoff holds the scheduling loop back while the API server is
// failing: after a binding fails for want of a server, the next pop waits,
// twice as long as the last wait if the failures go on, up to max; a
// successful binding ends it. Failures of bindings sent during a wait (up
// to the parallelism of the binder) count once.
type outageBackoff struct {
	clock    clock.Clock
	min, max time.Duration

	mu    sync.Mutex
	delay time.Duration // 0: no outage
	until time.Time
}

func newOutageBackoff(c clock.Clock) *outageBackoff {
	return &outageBackoff{clock: c, min: minOutageDelay, max: maxOutageDelay}
}

// observe records a binding's result.
func (b *outageBackoff) observe(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == nil:
		b.delay, b.until = 0, time.Time{}
	case unavailable(err):
		now := b.clock.Now()
		if now.Before(b.until) {
			return // the same spell of failures
		}
		b.delay = min(max(2*b.delay, b.min), b.max)
		b.until = now.Add(b.delay)
	}
}

// wait returns once the current backoff has passed, or ctx's error.
func (b *outageBackoff) wait(ctx context.Context) error {
	for {
		b.mu.Lock()
		left := b.until.Sub(b.clock.Now())
		b.mu.Unlock()
		if left <= 0 {
			return ctx.Err()
		}
		t := b.clock.NewTimer(left)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// unavailable reports whether err says the API server (or etcd behind it)
// cannot serve now, rather than that the binding itself is wrong.
func unavailable(err error) bool {
	if errors.Is(err, ErrFenced) || errors.Is(err, context.Canceled) || errors.Is(err, scheduler.ErrNodeDeleted) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= 500 || code == 429
	}
	return true // no answer: refused, reset, timed out
}

// guardedBinder checks the fence before each binding (the transport checks
// it again when the request leaves) and feeds the outage backoff.
type guardedBinder struct {
	next    scheduler.Binder
	fence   *fence
	backoff *outageBackoff
}

// Bind implements scheduler.Binder, with start passed on to the binder
// underneath, so that it still checks, once its slot is free, that the
// node was not deleted meanwhile.
func (b guardedBinder) Bind(ctx context.Context, pod *v1.Pod, node string, start func() bool, done func(error)) {
	if err := b.fence.held(); err != nil {
		done(err)
		return
	}
	observed := func(err error) {
		b.backoff.observe(err)
		if scheduler.IsStaleTerm(err) {
			// The API server's lease check says our term is over, or it
			// has not seen it yet: write nothing until a renewal says which.
			b.fence.suspect("the API server refused a binding stamped with this term")
		}
		done(err)
	}
	b.next.Bind(ctx, pod, node, start, observed)
}

// guardedReporter reports nothing while the fence is closed: a replica
// that does not hold the lease neither patches pods nor emits events
// about them.
type guardedReporter struct {
	next  scheduler.Reporter
	fence *fence
	log   *slog.Logger
}

// Unschedulable implements scheduler.Reporter, with the failure record
// passed on, so that the record a new leader parks pods from is written
// through the fence too.
func (r guardedReporter) Unschedulable(ctx context.Context, pod *v1.Pod, reason, message string, record func() scheduler.FailureRecord) {
	if err := r.fence.held(); err != nil {
		r.log.Debug("not reported", "pod", pod.Namespace+"/"+pod.Name, "reason", reason, "err", err)
		return
	}
	r.next.Unschedulable(ctx, pod, reason, message, record)
}

// Scheduled implements scheduler.Reporter.
func (r guardedReporter) Scheduled(ctx context.Context, pod *v1.Pod, node string) {
	r.next.Scheduled(ctx, pod, node)
}
