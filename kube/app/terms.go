package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

// terms runs the terms of leadership (one term, without leader election):
// each schedules from the current queue with a binder of its own, and
// ends when its context does, once its bindings, preemptions' evictions
// and gang releases have ended.
type terms struct {
	queues   *switchQueue
	cache    *scheduler.Cache
	handlers *scheduler.Handlers
	pods     cache.SharedIndexInformer
	// podGroups is the PodGroup informer; nil if the API server has none.
	podGroups cache.SharedIndexInformer
	qcfg      schedq.Config[types.NamespacedName, *v1.Pod]
	client    kubernetes.Interface
	fence     *fence
	backoff   *outageBackoff
	reporter  scheduler.Reporter
	opts      scheduler.Options
	preempt   *scheduler.PreemptionOptions // nil: no preemption
	releaser  scheduler.Releaser           // releases gangs stuck below minCount
	state     *state
	watch     *loopWatch // nil: not watched
	log       *slog.Logger
}

// run schedules until ctx ends. Before each pop it waits for the fence
// (the lease is known to be held) and for the outage backoff; the fence is
// checked again before each binding and when its request leaves.
func (t *terms) run(ctx context.Context) {
	q := t.queues.get()
	binder := termBinder(t.client, t.fence)
	s, err := t.newScheduler(q, guardedBinder{next: binder, fence: t.fence, backoff: t.backoff})
	if err != nil {
		t.log.Error("cannot schedule", "err", err)
		return
	}
	t.state.leading.Store(true)
	settling := t.settleInDoubt(ctx)
	t.log.Info("scheduling")
	for {
		if t.fence.wait(ctx) != nil || t.backoff.wait(ctx) != nil {
			break
		}
		info, err := q.Pop(ctx)
		if err != nil {
			break
		}
		t.cycle(ctx, s, info)
	}
	// Bindings in flight were cancelled with ctx; those refused or
	// cancelled have given their pods back to the cache by now. Those
	// still in PreBind (which may not heed ctx) are waited for first:
	// each then hands its binding to the binder or ends it.
	s.Wait()
	binder.Wait()
	t.waitWrites()
	settling()
	s.Release() // the framework lives on: it must not keep this term
	t.state.leading.Store(false)
}

// newScheduler builds a term's scheduler on q with binder, with the
// terms' features on (a feature that cannot be is logged, and off).
func (t *terms) newScheduler(q *podQueue, binder scheduler.Binder) (*scheduler.Scheduler, error) {
	s, err := scheduler.New(q, t.cache, binder, t.reporter, t.opts)
	if err != nil {
		return nil, err
	}
	if err := s.Enable(t.features()); err != nil {
		t.log.Error("scheduling without some features", "err", err)
	}
	return s, nil
}

// features are the optional parts of each term's scheduler: those the
// terms were given (scheduler.Features; the simulator enables the same
// through the same call).
func (t *terms) features() scheduler.Features {
	f := scheduler.Features{Preemption: t.preempt}
	if t.releaser != nil {
		f.GangRelease = &scheduler.GangReleaseOptions{Releaser: t.releaser}
	}
	return f
}

// settleInDoubt settles the bindings an earlier term left in doubt
// (scheduler.InDoubt: their term ended before their answer came), each by
// a read of its pod from the API server (a read: the fence lets it
// through), and the claims' allocations held for them, each by a read of
// its claim. The first round runs before the term's first pop, so that a
// pod whose binding was not made is queued at once, in its order among
// the others; all its reads share one deadline (settleFirstRound), so a
// slow API server holds the term's start back that long at most, not a
// read's timeout per pod. The pods left are read again every
// settleRetry, until none is left or ctx ends, on a goroutine that the
// returned function waits for. Meanwhile each keeps its room on its
// node, which is safe.
func (t *terms) settleInDoubt(ctx context.Context) (wait func()) {
	first, cancel := context.WithTimeout(ctx, settleFirstRound)
	left := t.settleRound(first)
	cancel()
	if left == 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for left > 0 {
			select {
			case <-t.backoff.clock.After(settleRetry):
			case <-ctx.Done():
				return
			}
			left = t.settleRound(ctx)
		}
	}()
	return func() { <-done }
}

// settleRetry is how often a read that settles a binding in doubt is
// tried again after a failure; settleFirstRound bounds the reads of the
// first round, before the term's first pop, all together.
const (
	settleRetry      = time.Second
	settleFirstRound = 5 * time.Second
)

// settleRound reads each claim held for a binding in doubt
// (profile.Framework.HeldClaims), then each binding in doubt's pod, once,
// each read within 10 s and all within ctx, and settles those it can; it
// returns how many are left. The claims come first, so that a pod
// settled unbound, queued again, finds its claims as the API server has
// them.
func (t *terms) settleRound(ctx context.Context) int {
	left := t.settleClaims(ctx)
	for _, d := range t.cache.InDoubt() {
		if ctx.Err() != nil {
			left++
			continue
		}
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		now, err := t.client.CoreV1().Pods(d.Pod.Namespace).Get(gctx, d.Pod.Name, metav1.GetOptions{})
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			now = nil
		case err != nil:
			t.log.Debug("binding in doubt: read failed", "pod", d.Pod.Namespace+"/"+d.Pod.Name, "err", err)
			left++
			continue
		}
		t.handlers.SettleInDoubt(d, now)
	}
	return left
}

// settleClaims reads each claim held for a binding in doubt once and
// settles those it can (settleRound); it returns how many are left held
// (a read failed, or the claim is not in the claims informer yet).
func (t *terms) settleClaims(ctx context.Context) int {
	fws := t.opts.Frameworks()
	if len(fws) == 0 {
		return 0
	}
	fw := fws[0] // the profiles share their claim holds (profile.Setup.Alongside)
	for _, h := range fw.HeldClaims() {
		if ctx.Err() != nil {
			break
		}
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		now, err := t.readHeldClaim(gctx, h)
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			now = nil
		case err != nil:
			t.log.Debug("claim held for a binding in doubt: read failed", "claim", h.Namespace+"/"+h.Name, "err", err)
			continue
		}
		if _, freed := fw.SettleHeldClaim(h, now); freed != nil {
			t.handlers.Other(clusterevent.ResourceClaim, clusterevent.Update, freed, deallocated(freed))
		}
	}
	return len(fw.HeldClaims())
}

// readHeldClaim reads h's claim from the API server: by its name, or,
// for a pod's extended resources' claim (h.Pod), whose name PreBind had
// the server generate, as the claim of the namespace's that the pod owns
// as such (nil if none).
func (t *terms) readHeldClaim(ctx context.Context, h profile.HeldClaim) (*resourceapi.ResourceClaim, error) {
	claims := t.client.ResourceV1().ResourceClaims(h.Namespace)
	if h.Pod == "" {
		return claims.Get(ctx, h.Name, metav1.GetOptions{})
	}
	list, err := claims.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return profile.ExtendedClaimOf(list.Items, h.Pod), nil
}

// deallocated returns claim without its allocation: the event of its
// deallocation, from claim to it, wakes the pods that DynamicResources
// rejected while claim's devices were held.
func deallocated(claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	cp := claim.DeepCopy()
	cp.Status.Allocation = nil
	return cp
}

// termBinder is a term's binder: each binding stamped with the term of
// the fence (none without leader election).
func termBinder(client kubernetes.Interface, f *fence) *scheduler.APIBinder {
	binder := scheduler.NewAPIBinder(client, 0)
	binder.Stamp = f.stamp
	return binder
}

// waitWrites waits for the term's other writes still under way: the
// evictions of its preemptions and the deletions of its gang releases.
// Only the scheduling loop starts them, and it has stopped; their
// callbacks take the queue's lock, the scheduler's leaf locks and the pod
// events' lock (an eviction that failed: retryPreemptor), none of which
// the caller holds, and whose holders (the pod handlers) wait for nothing
// the caller does, so the wait cannot deadlock.
func (t *terms) waitWrites() {
	if t.preempt != nil {
		t.preempt.Evictor.Wait()
	}
	if t.releaser != nil {
		t.releaser.Wait()
	}
}

// cycle runs one scheduling cycle under the stall watch.
func (t *terms) cycle(ctx context.Context, s *scheduler.Scheduler, info scheduler.Attempt) {
	if t.watch != nil {
		t.watch.begin()
		defer t.watch.end()
	}
	s.ScheduleOne(ctx, info)
}

// rebuild replaces the ended term's queue by a new one holding every
// pending pod of ours the pod informer knows, through the handlers (so
// that a pod is queued as an informer event would queue it). The warm
// start parks behind its failure record only a pod the old queue held
// parked: one the old queue had woken since (through a change the
// record's fingerprints may not show), or popped, is tried.
func (t *terms) rebuild(ctx context.Context) {
	old := t.queues.get() // only rebuild replaces it, on this goroutine
	cfg := t.qcfg
	if cfg.Budget != nil {
		scheduler.UseWakeBudget(&cfg, t.cache, t.opts.Frameworks()...) // a fresh ledger: the old term's promises died with it
	}
	next, err := schedq.New(cfg)
	if err != nil {
		t.log.Error("new queue; keeping the old one", "err", err)
		return
	}
	t.queues.replace(ctx, next, func(q *podQueue) {
		h := *t.handlers
		h.Queue = q
		addPodGroups(&h, t.podGroups)
		var pending []*v1.Pod
		for _, obj := range t.pods.GetStore().List() {
			if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName == "" {
				pending = append(pending, p)
			}
		}
		h.AddPods(pending, func(p *v1.Pod) bool { return wasParked(old, p) })
	})
	counts := next.Counts()
	t.log.Info("queue rebuilt for the next term", "pending", counts.Active+counts.Backoff+counts.Unschedulable+counts.Gated)
}

// wasParked reports whether q (a replaced queue, read under the switch
// queue's lock) held p parked.
func wasParked(q *podQueue, p *v1.Pod) bool {
	if q == nil {
		return true
	}
	_, loc, found := q.Get(framework.Key(p))
	return found && loc == schedq.InUnschedulable
}

// campaign runs leader election until ctx ends: it runs term while it
// leads, and after a lost lease goes back to standby (the caches stay
// warm) and campaigns again. On SIGTERM the lease is released only once
// the term and its bindings have ended, so a successor never overlaps.
func campaign(ctx context.Context, client kubernetes.Interface, f *fence, o Options, log *slog.Logger, term func(context.Context)) error {
	identity := o.Identity
	if identity == "" {
		identity = defaultIdentity()
	}
	lock := &fencedLock{fence: f, Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1ObjectMeta(o.LeaseNamespace, o.LeaseName),
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}}
	for {
		log.Info("waiting for the lease", "lease", o.LeaseNamespace+"/"+o.LeaseName, "identity", identity)
		if err := campaignOnce(ctx, lock, f, o, log, term); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return shutdownErr(ctx)
		}
		log.Warn("lost the leader lease: back to standby, campaigning again", "identity", identity)
		if err := awaitLease(ctx, lock.Interface, o.Clock); err != nil {
			return shutdownErr(ctx)
		}
	}
}

// defaultIdentity is this process's identity in the Lease when
// --leader-elect-identity is not given: the host name and a random UUID,
// new at each start. A process restarted on the same host (a container
// restarted in its pod, pid 1 again) thus waits for its previous life's
// Lease to expire instead of renewing it at once under the same term,
// while that life's last bindings may still arrive; and two processes
// never share one (two replicas on one node's network, say).
func defaultIdentity() string {
	host, _ := os.Hostname()
	return host + "_" + string(uuid.NewUUID())
}

// awaitLease returns once the lease can be read (or is known not to
// exist), polling every leasePoll. A term that ended because the API
// server went away thus campaigns again as soon as it is back, with the
// elector's immediate first attempt, rather than up to 2.2 retry periods
// later (the elector's jittered retry).
func awaitLease(ctx context.Context, lock resourcelock.Interface, clk clock.Clock) error {
	for {
		gctx, cancel := context.WithTimeout(ctx, time.Second)
		_, _, err := lock.Get(gctx)
		cancel()
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-clk.After(leasePoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

const leasePoll = 250 * time.Millisecond

// campaignOnce runs one leader elector until it stops leading (or ctx
// ends), and waits for its term to end.
func campaignOnce(ctx context.Context, lock *fencedLock, f *fence, o Options, log *slog.Logger, term func(context.Context)) error {
	var ts termGuard
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.SchedulerName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				ts.run(func() {
					// A read of the lease that shows another holder ends the
					// term (fence.lost), but the elector may go on leading:
					// its next read shows our record again and it renews.
					// Then the next term starts at once, and schedules when
					// a renewal of ours opens the fence.
					for runTerm(ctx, lctx, f, term); lctx.Err() == nil && ctx.Err() == nil; runTerm(ctx, lctx, f, term) {
						log.Info("the term ended while the lease is still ours: a new term begins", "identity", lock.Identity())
					}
				})
			},
			// The fence closed at the first failed renewal already.
			OnStoppedLeading: f.end,
			OnNewLeader: func(id string) {
				log.Info("leader", "identity", id, "me", id == lock.Identity())
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	leCtx, leCancel := context.WithCancel(context.Background())
	defer leCancel()
	stop := context.AfterFunc(ctx, func() {
		ts.close()
		leCancel()
	})
	defer stop()
	le.Run(leCtx)
	ts.close()
	return nil
}

// runTerm runs one term: until the lease is lost (lctx ends), the fence
// ends it, or ctx ends.
func runTerm(ctx, lctx context.Context, f *fence, term func(context.Context)) {
	tctx, cancel := context.WithCancel(lctx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	f.begin(cancel)
	defer f.end()
	term(tctx)
}

// termGuard runs at most the terms started before close, and close waits
// for them to end.
type termGuard struct {
	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup
}

func (g *termGuard) run(f func()) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.running.Add(1)
	g.mu.Unlock()
	defer g.running.Done()
	f()
}

func (g *termGuard) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.running.Wait()
}
