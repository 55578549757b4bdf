package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// podGroupVersion is the API of the PodGroups the scheduler watches.
var podGroupVersion = schedulingv1beta1.SchemeGroupVersion.String()

// servesPodGroups asks discovery whether the API server serves PodGroups
// (scheduling.k8s.io/v1beta1, behind the GenericWorkload feature gate,
// off by default). A server without them is not an error: the scheduler
// runs without gang scheduling. The request ends with ctx, or after
// discoveryTimeout: the API clients set no timeout of their own
// (rest.Config.Timeout is 0, and the clientset's discovery shares its
// HTTP client, so client-go's discovery default does not apply), and a
// request that hangs would otherwise hold up the caches' sync for good.
func servesPodGroups(ctx context.Context, client kubernetes.Interface) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	list, err := client.Discovery().ServerResourcesForGroupVersionWithContext(ctx, podGroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovery of %s: %w", podGroupVersion, err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "podgroups" }), nil
}

// discoveryRetry is the wait between two discovery requests that failed
// (askPodGroups), and discoveryTimeout how long one may take
// (servesPodGroups).
const (
	discoveryRetry   = time.Second
	discoveryTimeout = 10 * time.Second
)

// askPodGroups asks servesPodGroups until it answers, every
// discoveryRetry on clk, saying each failure in the log: an API server
// that cannot answer at start-up (restarting, overloaded) must not turn
// gang scheduling off for the process's life, which would leave every
// pod naming a PodGroup waiting. It returns ctx's error if ctx ends first,
// a request under way included.
func askPodGroups(ctx context.Context, client kubernetes.Interface, clk clock.Clock, log *slog.Logger) (bool, error) {
	for {
		ok, err := servesPodGroups(ctx, client)
		if err == nil {
			return ok, nil
		}
		if ctx.Err() != nil {
			return false, fmt.Errorf("discovery of %s: %w", podGroupVersion, ctx.Err())
		}
		log.Warn("could not tell whether the API server serves PodGroups; asking again", "api", podGroupVersion, "in", discoveryRetry, "err", err)
		t := clk.NewTimer(discoveryRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, fmt.Errorf("discovery of %s: %w", podGroupVersion, ctx.Err())
		case <-t.C():
		}
	}
}

// watchPodGroups registers the PodGroup informer's handlers if the API
// server serves PodGroups (askPodGroups), and says in the log whether gang
// scheduling is on. It returns the informer (nil if off) and its
// handlers' synced function (always true if off). syncCaches calls it,
// once the endpoints are served and before the factory starts: asking
// may take as long as the API server takes to answer.
func watchPodGroups(ctx context.Context, client kubernetes.Interface, clk clock.Clock, factory informers.SharedInformerFactory, h *scheduler.Handlers, log *slog.Logger) (cache.SharedIndexInformer, func() bool, error) {
	off := func() bool { return true }
	ok, err := askPodGroups(ctx, client, clk, log)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		log.Info("the API server does not serve PodGroups (feature gate GenericWorkload and --runtime-config="+podGroupVersion+"=true): gang scheduling is off; pods naming a PodGroup wait for it", "api", podGroupVersion)
		return nil, off, nil
	}
	inf := factory.Scheduling().V1beta1().PodGroups().Informer()
	synced, err := h.RegisterPodGroups(inf)
	if err != nil {
		return nil, nil, err
	}
	log.Info("watching PodGroups: gang scheduling is on", "api", podGroupVersion)
	return inf, synced, nil
}

// podGroupStore is the PodGroup informer's store as the forecasts read it
// (liveState.groups), from their own goroutines: empty until syncCaches
// has asked discovery and registered the informer (watchPodGroups), and
// for good without PodGroups. set publishes the informer through an
// atomic, so a List that finds it comes after its registration.
type podGroupStore struct {
	inf atomic.Pointer[cache.SharedIndexInformer]
}

// set publishes inf; nil (gang scheduling off) leaves the store empty.
func (s *podGroupStore) set(inf cache.SharedIndexInformer) {
	if inf != nil {
		s.inf.Store(&inf)
	}
}

// List lists the PodGroups the informer holds; none before set.
func (s *podGroupStore) List() []any {
	if inf := s.inf.Load(); inf != nil {
		return (*inf).GetStore().List()
	}
	return nil
}

// addPodGroups gives a fresh queue every PodGroup the informer knows.
func addPodGroups(h *scheduler.Handlers, inf cache.SharedIndexInformer) {
	if inf == nil {
		return
	}
	for _, obj := range inf.GetStore().List() {
		if pg, ok := obj.(*schedulingv1beta1.PodGroup); ok {
			h.AddPodGroup(pg)
		}
	}
}

// SetGroup implements scheduler.Queue.
func (s *switchQueue) SetGroup(name string, spec schedq.GroupSpec) error {
	return s.do(func(q *podQueue) error { return q.SetGroup(name, spec) })
}

// DeleteGroup implements scheduler.Queue.
func (s *switchQueue) DeleteGroup(name string) error {
	return s.do(func(q *podQueue) error { return q.DeleteGroup(name) })
}

// Warn implements scheduler.Reporter, through the fence like the rest.
func (r guardedReporter) Warn(ctx context.Context, obj runtime.Object, reason, message string) {
	if err := r.fence.held(); err != nil {
		r.log.Debug("warning not emitted", "reason", reason, "err", err)
		return
	}
	r.next.Warn(ctx, obj, reason, message)
}
