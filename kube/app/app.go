// Package app runs schedq's scheduler against a real cluster: client,
// informers, leader election, the scheduling loop and the HTTP endpoints.
// cmd/schedq only parses flags into Options and calls Run.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	fwprofile "github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
	"github.com/schedq/schedq/metrics"
)

// Options configure the scheduler. The command's flags fill them.
type Options struct {
	Kubeconfig    string // empty: as kubectl finds it (see Config)
	SchedulerName string
	// Address serves /metrics, /healthz, /readyz, /livez and /debug/queue
	// over plain HTTP without authentication: for development, on a
	// loopback address only. Empty: off.
	Address string
	// Serving is the HTTPS port with delegated authentication and
	// authorization (see NewServingOptions). Nil: off.
	Serving *ServingOptions
	// PercentageOfNodesToScore: see scheduler.Options.
	PercentageOfNodesToScore int
	// NoWakeBudget wakes every pending pod a cluster event may help, as
	// kube-scheduler does, instead of only those the event makes room for
	// (scheduler.WakeBudget).
	NoWakeBudget bool
	// Fairness shares the queue fairly between namespaces. Zero: off.
	Fairness FairnessOptions
	// History is how the forecasts learn runtimes from past pods.
	History HistoryOptions
	// Config is what Validate took from --config, if given.
	Config ConfigOptions

	LeaderElect    bool
	LeaseNamespace string
	LeaseName      string
	Identity       string // default: hostname_<random UUID>, new at each start
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration
	// FenceMargin is how long before the lease could expire, counted from
	// the last successful renewal, the leader stops writing. Default:
	// LeaseDuration - RenewDeadline.
	FenceMargin time.Duration

	QPS   float32
	Burst int

	Logger *slog.Logger
	// Klog routes klog, the log of client-go and k8s.io/apiserver, to
	// Logger, rate-limited (libraryQuiet): a process-wide setting, for the
	// command. The event broadcaster logs there in any case.
	Klog bool
	// WrapTransport, if set, wraps the transport of every API client,
	// beneath the fence: for tests that hold requests the fence has let
	// through, as a paused process would. Nil in production.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Clock is for the queue (its timestamps, backoff and flushes), the
	// fence, the outage backoff, the stall watch and the forecasts'
	// state, which reads the queue's timestamps against it. Default: the
	// wall clock.
	Clock clock.Clock
	// StallTimeout is how long one scheduling cycle may run before
	// /healthz, /livez and /readyz fail (see Handler). Default
	// DefaultStallTimeout.
	StallTimeout time.Duration
	// Dump, if set, asks for the cache's dump in the log: each value
	// received logs one (dumpEach). The command sends SIGUSR2 on it, as
	// kube-scheduler dumps its cache on SIGUSR2. Nil: none.
	Dump <-chan os.Signal

	// forecasting, if set, is given the forecaster run makes and the live
	// state it copies, before the informers start: for tests that copy
	// the state while the scheduler runs. Nil in production.
	forecasting func(*forecaster, *liveState)
	// serving, if set, is given the handler of the HTTP endpoints before
	// the informers start: for tests that ask them without a listener.
	// Nil in production.
	serving func(http.Handler)
	// wrapServing, if set, wraps the handler the listeners serve: for
	// tests that watch requests end. Nil in production.
	wrapServing func(http.Handler) http.Handler
	// listen, if set, makes the plain HTTP listener on Address: for tests
	// that serve in memory, in a synctest bubble. Nil in production:
	// net.Listen on TCP.
	listen func(address string) (net.Listener, error)
}

// Run runs the scheduler until ctx ends (SIGTERM). With leader election,
// a replica that loses the lease goes back to standby and campaigns
// again. It returns an error that names the problem if it cannot start.
func Run(ctx context.Context, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Address != "" {
		if err := checkLoopback(o.Address); err != nil {
			return err
		}
	}
	if err := o.History.load(); err != nil {
		return fmt.Errorf("--history-file: %w", err)
	}
	base, err := apiConfig(o)
	if err != nil {
		return err
	}
	var f *fence
	if o.LeaderElect {
		if f, err = newLeaderFence(o); err != nil {
			return err
		}
	}
	cs, err := newClients(base, f, o)
	if err != nil {
		return err
	}
	if err := reachable(ctx, cs.sched, base.Host); err != nil {
		if ctx.Err() != nil { // SIGTERM while connecting: a shutdown, as later
			return shutdownErr(ctx)
		}
		return err
	}
	sp, err := o.Serving.prepare(o.Kubeconfig)
	if err != nil {
		return err
	}
	return run(ctx, cs, f, sp, o, log)
}

// apiConfig is the API clients' configuration: the kubeconfig's cluster
// and credentials, o's rate limit and transport wrapper, and protobuf, as
// kube-scheduler's default clientConnection asks (JSON is accepted too,
// for kinds served only as JSON). Protobuf costs the API server and the
// scheduler less per object than JSON: the pod and node watches and the
// bindings are most of the traffic. Responses are not compressed, as
// kube-scheduler asks: the API server is near, and gzip would cost both
// sides CPU on every large list for bandwidth the link does not lack.
func apiConfig(o Options) (*rest.Config, error) {
	base, err := Config(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	base.QPS, base.Burst = o.QPS, o.Burst
	base.UserAgent = "schedq/" + o.SchedulerName
	base.ContentType = runtime.ContentTypeProtobuf
	base.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	base.DisableCompression = true
	if o.WrapTransport != nil {
		base.Wrap(o.WrapTransport)
	}
	return base, nil
}

// newLeaderFence checks the lease timings and makes the fence.
func newLeaderFence(o Options) (*fence, error) {
	if err := leaseSeconds(o.LeaseDuration); err != nil {
		return nil, err
	}
	margin := o.FenceMargin
	if margin == 0 {
		margin = o.LeaseDuration - o.RenewDeadline
	}
	if margin <= 0 || margin >= o.LeaseDuration {
		return nil, fmt.Errorf("--leader-elect-fence-margin %v: must be more than 0 and less than --leader-elect-lease-duration (%v)", margin, o.LeaseDuration)
	}
	return newFence(o.Clock, o.LeaseDuration, margin), nil
}

// clients are the API clients, each with its own rate limit, as
// kube-scheduler has them: a burst of events or of bindings never delays a
// lease renewal.
type clients struct {
	sched  kubernetes.Interface // informers, bindings, status; writes pass the fence
	events kubernetes.Interface
	lease  kubernetes.Interface // leader election only
}

func newClients(base *rest.Config, f *fence, o Options) (clients, error) {
	var cs clients
	var err error
	sched := rest.CopyConfig(base)
	if f != nil {
		sched.Wrap(func(rt http.RoundTripper) http.RoundTripper { return fencedTransport{next: rt, fence: f} })
	}
	if cs.sched, err = kubernetes.NewForConfig(sched); err != nil {
		return cs, fmt.Errorf("client: %w", err)
	}
	if cs.events, err = kubernetes.NewForConfig(rest.CopyConfig(base)); err != nil {
		return cs, fmt.Errorf("client: %w", err)
	}
	lease := rest.CopyConfig(base)
	lease.QPS, lease.Burst = 5, 10
	lease.UserAgent = base.UserAgent + "/leader-election"
	// A renewal that hangs must not use up the renew deadline by itself.
	lease.Timeout = max(o.RenewDeadline/2, time.Second)
	if cs.lease, err = kubernetes.NewForConfig(lease); err != nil {
		return cs, fmt.Errorf("client: %w", err)
	}
	return cs, nil
}

// run runs the scheduler on the clients (real ones, or fakes in tests):
// it builds the process step by step, each step's cleanup run when it
// returns, the last first, then schedules until ctx ends.
func run(ctx context.Context, cs clients, f *fence, sp *securePort, o Options, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	p := &process{cs: cs, f: f, o: o, cancel: cancel}
	defer func() { p.undo.run() }()
	p.startLog(ctx, log)
	if err := p.prepare(ctx); err != nil {
		return err
	}
	if err := p.startFrameworks(ctx); err != nil {
		return err
	}
	if err := p.startQueue(ctx); err != nil {
		return err
	}
	if err := p.watchCluster(ctx); err != nil {
		return err
	}
	if o.Dump != nil {
		go dumpEach(ctx, o.Dump, p.c, p.queues.Counts, p.log)
	}
	if err := p.startForecasts(ctx); err != nil {
		return err
	}
	if err := p.serve(ctx, sp); err != nil {
		return err
	}
	if ok, err := p.syncCaches(ctx); !ok {
		return err
	}
	return p.schedule(ctx)
}

// process is what run builds, in the order it builds it, shared by its
// steps.
type process struct {
	cs     clients
	f      *fence
	o      Options
	cancel context.CancelFunc // ends run's context, before a cleanup that waits on it
	undo   cleanups

	log   *slog.Logger // rate-limited by quiet
	quiet *quietHandler
	lib   logr.Logger // the libraries' log (client-go, the framework)

	reg      *prometheus.Registry
	rec      *metrics.Recorder
	c        *scheduler.Cache
	qcfg     schedq.Config[types.NamespacedName, *v1.Pod]
	recorder *profileRecorder
	factory  informers.SharedInformerFactory
	fws      []*fwprofile.Framework
	queues   *switchQueue
	sm       *scheduler.Metrics

	h              *scheduler.Handlers
	pods           cache.SharedIndexInformer
	others         map[string]cache.SharedIndexInformer
	handlersSynced func() bool
	reporter       guardedReporter
	podGroups      cache.SharedIndexInformer // set by syncCaches (watchPodGroups); nil if off
	groupsSynced   func() bool
	groupStore     podGroupStore // podGroups' store for the forecasts, set with it
	preempt        *scheduler.PreemptionOptions
	noms           scheduler.BindingNominator // the bindings' nominations (newPreemption)

	st    *state
	watch *loopWatch
	live  *liveState
	fc    *forecaster
}

// cleanups are what run does when it returns.
type cleanups []func()

// add adds fn, to run before those added earlier.
func (u *cleanups) add(fn func()) { *u = append(*u, fn) }

// run runs them, the last added first, as deferred calls: one that
// panics does not keep the others from running.
func (u cleanups) run() {
	for _, fn := range u {
		defer fn()
	}
}

// startLog rate-limits the process's log.
func (p *process) startLog(ctx context.Context, log *slog.Logger) {
	p.quiet = newQuietHandler(log.Handler(), 10*time.Second)
	p.log = slog.New(p.quiet)
	go p.quiet.run(ctx)
}

// prepare makes the metrics' registry, loads the profiles if Validate
// did not, and makes the queue's configuration and the libraries' log.
func (p *process) prepare(ctx context.Context) error {
	p.reg = prometheus.NewRegistry()
	p.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if len(p.o.profiles()) == 0 {
		if err := p.o.loadProfile(); err != nil {
			return err
		}
	}
	p.rec = metrics.New(metrics.Options{Profile: p.o.SchedulerName, EventLabels: clusterevent.QueueLabels})
	p.c = scheduler.NewCache()
	p.qcfg = p.o.queueConfig()
	p.qcfg.Recorder = p.rec
	lib, libQuiet := libraryLogger(p.quiet.next)
	p.lib = lib
	go libQuiet.run(ctx)
	if p.o.Klog {
		klog.SetLogger(lib)
	}
	return nil
}

// startFrameworks starts the event broadcaster and builds the profiles'
// frameworks on the informer factory, with the wake budget unless it is
// off.
func (p *process) startFrameworks(ctx context.Context) error {
	broadcaster, err := startEvents(ctx, p.cs.events, p.lib)
	if err != nil {
		return err
	}
	p.undo.add(broadcaster.Shutdown)
	p.recorder = newProfileRecorder(broadcaster, p.o.schedulerNames())
	p.factory = informers.NewSharedInformerFactory(p.cs.sched, 0)
	fws, err := upstreamFrameworks(ctx, p.o, &p.qcfg, p.cs.sched, p.factory, p.recorder, p.lib)
	if err != nil {
		return err
	}
	p.fws = fws
	p.undo.add(func() { closeAll(fws) })
	scheduler.EquipQueue(&p.qcfg, p.c, !p.o.NoWakeBudget, fws...) // as the simulator's
	return nil
}

// fw is the forecasts' framework, whose DRA manager the others share.
func (p *process) fw() *fwprofile.Framework { return p.fws[0] }

// startQueue makes the queue and registers the queue's and the
// scheduler's metrics.
func (p *process) startQueue(ctx context.Context) error {
	q, err := schedq.New(p.qcfg)
	if err != nil {
		return err
	}
	p.queues = &switchQueue{}
	p.queues.replace(ctx, q, func(*podQueue) {})
	p.undo.add(p.queues.close)
	if err := p.rec.Register(p.reg, p.queues); err != nil {
		return err
	}
	if p.sm, err = scheduler.NewMetrics(p.reg, p.o.SchedulerName); err != nil {
		return err
	}
	return scheduler.RegisterInDoubt(p.reg, p.c)
}

// watchCluster registers the event handlers that feed the queue and the
// cache (pods, nodes, namespaces and what the hints watch), the fenced
// reporter, and preemption. The PodGroups' come later, in syncCaches:
// they wait for discovery, which must not hold up the endpoints.
func (p *process) watchCluster(ctx context.Context) error {
	p.h = scheduler.NewHandlers(p.queues, p.c, p.o.SchedulerName, p.qcfg)
	p.h.Logger = p.log
	if err := useProfiles(ctx, p.h, p.o, p.fws, p.lib); err != nil {
		return err
	}
	p.pods = p.factory.Core().V1().Pods().Informer()
	p.others = watched(p.factory, p.qcfg.Hints)
	var err error
	p.handlersSynced, err = p.h.Register(p.pods, p.factory.Core().V1().Nodes().Informer(),
		p.factory.Core().V1().Namespaces().Informer(), eventSources(p.others, p.fw().EventSources()))
	if err != nil {
		return err
	}
	p.reporter = guardedReporter{next: scheduler.APIReporter{Client: p.cs.sched, Recorder: p.recorder, Logger: p.log}, fence: p.f, log: p.log}
	p.h.Events = p.reporter
	p.preempt, p.noms, err = newPreemption(p.factory, p.cs.sched, p.recorder, p.reg, p.f, p.log, p.o.SchedulerName)
	return err
}

// startForecasts makes the live state the forecasts copy, the
// forecaster and its history, which learns from the pod informer and,
// with --history-file, is written to the file until ctx ends.
func (p *process) startForecasts(ctx context.Context) error {
	o, queues := p.o, p.queues
	p.st = &state{}
	p.watch = newLoopWatch(o.Clock, o.StallTimeout)
	p.live = &liveState{queue: queues, cache: p.c, pods: p.pods.GetStore(),
		namespaces: p.factory.Core().V1().Namespaces().Informer().GetStore(), groups: &p.groupStore,
		objects: forecastStores(p.others), claims: claimTracker(p.fw().Framework(), p.others),
		templates: templateInformer(p.cs.sched, p.others, p.log), budgets: p.preempt.Budgets,
		schedulerName: o.SchedulerName, profiles: liveProfiles(o), clock: o.Clock}
	p.fc = newForecaster(o, p.live, o.Clock)
	p.fc.busy = func() bool { return queues.Counts().Active > 0 }
	p.fc.stop = ctx.Done()
	// Before the queue and the frameworks close: cancel first, which ends
	// the forecast under way (and keeps another from starting), then
	// wait for it, a bounded time.
	p.undo.add(func() {
		p.cancel()
		if !p.fc.waitRun(forecastStopWait) {
			p.log.Warn("shutdown: a forecast still runs after waiting for it to end", "waited", forecastStopWait)
		}
	})
	if o.forecasting != nil {
		o.forecasting(p.fc, p.live)
	}
	if _, err := p.pods.AddEventHandler(p.fc.hist.handler()); err != nil {
		return err
	}
	if o.History.File != "" {
		hf, err := startHistoryFile(ctx, o, p.fc.hist, p.pods.GetStore(), p.reg, p.log)
		if err != nil {
			return err
		}
		p.undo.add(func() { // cancel first: the last write comes when ctx ends
			p.cancel()
			<-hf
		})
	}
	return nil
}

// serve serves the HTTP endpoints: to the test's hook, on the plain
// address and on the secure port, as configured, until ctx ends; run
// returns once they have drained.
func (p *process) serve(ctx context.Context, sp *securePort) error {
	view := inDoubtView{gatedQueueView{p.queues, scheduler.NewGateReasons(ctx, p.fws...).WithGangGate(p.c)}, p.c.InDoubtOn, p.c.HeldApart}
	serving := leaderOnly(handler(p.reg, view, p.st.ready, p.watch.live, p.fc), p.st.role)
	if p.o.wrapServing != nil {
		serving = p.o.wrapServing(serving)
	}
	if p.o.serving != nil {
		p.o.serving(serving)
	}
	// run returns (and the process exits) only once the servers have
	// drained: cancel first, as they stop when ctx ends.
	drained := func(wait func()) {
		p.undo.add(func() {
			p.cancel()
			wait()
		})
	}
	if p.o.Address != "" {
		wait, err := serveInsecure(ctx, p.o.listen, p.o.Address, serving, p.log)
		if err != nil {
			return err
		}
		drained(wait)
	}
	if sp != nil {
		wait, err := sp.serve(ctx, serving, p.log)
		if err != nil {
			return err
		}
		drained(wait)
	}
	return nil
}

// syncCaches asks discovery whether the API server serves PodGroups and
// registers their informer if so (watchPodGroups), starts the informers
// and waits for their caches and the handlers to sync, then marks the
// process ready (and, without leader election, leading). It runs once the
// endpoints are served: /healthz answers while discovery is asked again,
// as while the informers list, and /readyz waits for both. Not ok: run
// returns err (nil if ctx was cancelled meanwhile).
func (p *process) syncCaches(ctx context.Context) (ok bool, err error) {
	if p.podGroups, p.groupsSynced, err = watchPodGroups(ctx, p.cs.sched, p.o.Clock, p.factory, p.h, p.log); err != nil {
		if ctx.Err() != nil {
			return false, shutdownErr(ctx)
		}
		return false, err
	}
	p.groupStore.set(p.podGroups)
	// On start every pending pod of ours is listed into the queue by the
	// informers. The caches stay warm for the life of the process.
	p.factory.Start(ctx.Done())
	if tmpl := p.live.templates; tmpl != nil { // its sync is not waited for: see templateInformer
		var running sync.WaitGroup
		p.undo.add(func() { // cancel first: run's deferred cancel comes only after this wait
			p.cancel()
			running.Wait()
		})
		running.Go(func() { tmpl.Run(ctx.Done()) })
	}
	for typ, ok := range p.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return false, fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), p.handlersSynced, p.groupsSynced) {
		return false, shutdownErr(ctx)
	}
	if !p.o.LeaderElect {
		// The only replica leads from the start: its debug endpoints
		// answer as soon as /readyz does (see leaderOnly).
		p.st.leading.Store(true)
	}
	p.st.synced.Store(true)
	counts := p.queues.Counts()
	p.log.Info("caches synced", "nodes", p.c.NodeCount(), "pending", counts.Active+counts.Backoff+counts.Unschedulable+counts.Gated)
	return true, nil
}

// schedule schedules until ctx ends: from now on without leader
// election, else in each term this replica leads, the queue rebuilt
// after each term it loses.
func (p *process) schedule(ctx context.Context) error {
	p.log.Info("scheduling with kube-scheduler's framework", "profiles", p.o.schedulerNames())
	t := &terms{
		queues: p.queues, cache: p.c, handlers: p.h, pods: p.pods, podGroups: p.podGroups, qcfg: p.qcfg, client: p.cs.sched, fence: p.f,
		backoff: newOutageBackoff(p.o.Clock), state: p.st, watch: p.watch, log: p.log, reporter: p.reporter,
		opts:     schedulerOptions(p.o, p.sm, p.log, p.fws, p.noms),
		preempt:  p.preempt,
		releaser: &scheduler.APIReleaser{Client: p.cs.sched, Recorder: p.recorder},
	}
	if !p.o.LeaderElect {
		t.run(ctx)
		return shutdownErr(ctx)
	}
	return campaign(ctx, p.cs.lease, p.f, p.o, p.log, func(tctx context.Context) {
		t.run(tctx)
		if ctx.Err() == nil {
			t.rebuild(ctx)
		}
	})
}

// shutdownErr is the error of a process whose ctx ended: none for a
// cancellation (SIGTERM), else the context's cause.
func shutdownErr(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), context.Canceled) {
		return nil
	}
	return context.Cause(ctx)
}

// reachable fails fast, with the address, if the API server does not answer.
func reachable(ctx context.Context, client kubernetes.Interface, host string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := client.Discovery().ServerVersion()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("API server %s is not reachable: %w", host, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("API server %s is not reachable: no answer within 15s", host)
	}
}

// queueView is what the HTTP endpoints read.
type queueView interface {
	Dump() schedq.Dump[types.NamespacedName]
	Explain(key types.NamespacedName) (schedq.Explanation[types.NamespacedName], error)
	// Get reports whether the pod of key is queued or in flight, in
	// O(1): without Explain's position in line, which costs O(queued
	// pods) under the queue's lock.
	Get(key types.NamespacedName) (schedq.Info[*v1.Pod], schedq.Location, bool)
	// Pending lists the pods in the order they wait.
	Pending(o schedq.PendingOptions[*v1.Pod]) schedq.PendingPage[types.NamespacedName]
	// ExplainListed explains, in place, pods an unexplained listing
	// holds (schedq.PendingOptions.Unexplained), as they are now: a pod
	// that left activeQ and came back since loses its listed place.
	ExplainListed(items []schedq.PendingItem[types.NamespacedName])
	// Tenants reports the queue's tenants; nil without fair sharing,
	// which is how the listing knows whether ?tenant= means anything.
	Tenants() []schedq.TenantStats
}
