// Package app runs schedq's scheduler against a real cluster: client,
// informers, leader election, the scheduling loop and the HTTP endpoints.
// cmd/schedq only parses flags into Options and calls Run.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

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

	// forecasting, if set, is given the forecaster run makes and the live
	// state it copies, before the informers start: for tests that copy
	// the state while the scheduler runs. Nil in production.
	forecasting func(*forecaster, *liveState)
	// serving, if set, is given the handler of the HTTP endpoints before
	// the informers start: for tests that ask them without a listener.
	// Nil in production.
	serving func(http.Handler)
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

// run runs the scheduler on the clients (real ones, or fakes in tests).
func run(ctx context.Context, cs clients, f *fence, sp *securePort, o Options, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	quiet := newQuietHandler(log.Handler(), 10*time.Second)
	log = slog.New(quiet)
	go quiet.run(ctx)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if len(o.profiles()) == 0 {
		if err := o.loadProfile(); err != nil {
			return err
		}
	}
	rec := metrics.New(metrics.Options{Profile: o.SchedulerName, EventLabels: clusterevent.QueueLabels})
	c := scheduler.NewCache()
	qcfg := o.queueConfig()
	qcfg.Recorder = rec
	lib, libQuiet := libraryLogger(quiet.next)
	go libQuiet.run(ctx)
	if o.Klog {
		klog.SetLogger(lib)
	}
	broadcaster, err := startEvents(ctx, cs.events, lib)
	if err != nil {
		return err
	}
	defer broadcaster.Shutdown()
	recorder := newProfileRecorder(broadcaster, o.schedulerNames())
	factory := informers.NewSharedInformerFactory(cs.sched, 0)
	fws, err := upstreamFrameworks(ctx, o, &qcfg, cs.sched, factory, recorder, lib)
	if err != nil {
		return err
	}
	defer closeAll(fws)
	fw := fws[0] // the forecasts', whose DRA manager the others share
	if !o.NoWakeBudget {
		scheduler.UseWakeBudget(&qcfg, c, fws...) // room as their NodeResourcesFit counts it
	}
	q, err := schedq.New(qcfg)
	if err != nil {
		return err
	}
	queues := &switchQueue{}
	queues.replace(ctx, q, func(*podQueue) {})
	defer queues.close()
	if err := rec.Register(reg, queues); err != nil {
		return err
	}
	sm, err := scheduler.NewMetrics(reg, o.SchedulerName)
	if err != nil {
		return err
	}
	if err := scheduler.RegisterInDoubt(reg, c); err != nil {
		return err
	}

	h := scheduler.NewHandlers(queues, c, o.SchedulerName, qcfg)
	h.Logger = log
	if err := useProfiles(ctx, h, o, fws, lib); err != nil {
		return err
	}
	pods := factory.Core().V1().Pods().Informer()
	others := watched(factory, qcfg.Hints)
	handlersSynced, err := h.Register(pods, factory.Core().V1().Nodes().Informer(),
		factory.Core().V1().Namespaces().Informer(), eventSources(others, fw.EventSources()))
	if err != nil {
		return err
	}

	reporter := guardedReporter{next: scheduler.APIReporter{Client: cs.sched, Recorder: recorder, Logger: log}, fence: f, log: log}
	h.Events = reporter
	podGroups, groupsSynced, err := watchPodGroups(cs.sched, factory, h, log)
	if err != nil {
		return err
	}
	preempt, err := newPreemption(factory, cs.sched, recorder, reg, f, log, o.SchedulerName)
	if err != nil {
		return err
	}

	st := &state{}
	watch := newLoopWatch(o.Clock, o.StallTimeout)
	live := &liveState{queue: queues, cache: c, pods: pods.GetStore(),
		namespaces: factory.Core().V1().Namespaces().Informer().GetStore(), groups: storeOf(podGroups),
		objects: forecastStores(others), claims: claimTracker(fw.Framework(), others),
		templates: templateInformer(cs.sched, others, log), budgets: preempt.Budgets,
		schedulerName: o.SchedulerName, profiles: liveProfiles(o), clock: o.Clock}
	fc := newForecaster(o, live, o.Clock)
	fc.busy = func() bool { return queues.Counts().Active > 0 }
	fc.stop = ctx.Done()
	if o.forecasting != nil {
		o.forecasting(fc, live)
	}
	if _, err := pods.AddEventHandler(fc.hist.handler()); err != nil {
		return err
	}
	if o.History.File != "" {
		hf, err := startHistoryFile(ctx, o, fc.hist, pods.GetStore(), reg, log)
		if err != nil {
			return err
		}
		defer func() { // cancel first: the last write comes when ctx ends
			cancel()
			<-hf
		}()
	}
	serving := leaderOnly(handler(reg, inDoubtView{gatedQueueView{queues, scheduler.NewGateReasons(ctx, fws...)}, c.InDoubtOn, c.HeldApart}, st.ready, watch.live, fc), st.role)
	if o.serving != nil {
		o.serving(serving)
	}
	if o.Address != "" {
		if err := serveInsecure(ctx, o.Address, serving, log); err != nil {
			return err
		}
	}
	if sp != nil {
		if err := sp.serve(ctx, serving, log); err != nil {
			return err
		}
	}

	// On start every pending pod of ours is listed into the queue by the
	// informers. The caches stay warm for the life of the process.
	factory.Start(ctx.Done())
	if live.templates != nil { // its sync is not waited for: see templateInformer
		var running sync.WaitGroup
		defer func() { // cancel first: run's deferred cancel comes only after this wait
			cancel()
			running.Wait()
		}()
		running.Go(func() { live.templates.Run(ctx.Done()) })
	}
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), handlersSynced, groupsSynced) {
		return shutdownErr(ctx)
	}
	if !o.LeaderElect {
		// The only replica leads from the start: its debug endpoints
		// answer as soon as /readyz does (see leaderOnly).
		st.leading.Store(true)
	}
	st.synced.Store(true)
	counts := queues.Counts()
	log.Info("caches synced", "nodes", c.NodeCount(), "pending", counts.Active+counts.Backoff+counts.Unschedulable+counts.Gated)

	log.Info("scheduling with kube-scheduler's framework", "profiles", o.schedulerNames())
	t := &terms{
		queues: queues, cache: c, handlers: h, pods: pods, podGroups: podGroups, qcfg: qcfg, client: cs.sched, fence: f,
		backoff: newOutageBackoff(o.Clock), state: st, watch: watch, log: log, reporter: reporter,
		opts:     schedulerOptions(o, sm, log, fws),
		preempt:  preempt,
		releaser: &scheduler.APIReleaser{Client: cs.sched, Recorder: recorder},
	}
	if !o.LeaderElect {
		t.run(ctx)
		return shutdownErr(ctx)
	}
	return campaign(ctx, cs.lease, f, o, log, func(tctx context.Context) {
		t.run(tctx)
		if ctx.Err() == nil {
			t.rebuild(ctx)
		}
	})
}

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
	// Pending lists the pods in the order they wait.
	Pending(o schedq.PendingOptions[*v1.Pod]) schedq.PendingPage[types.NamespacedName]
	// Tenants reports the queue's tenants; nil without fair sharing,
	// which is how the listing knows whether ?tenant= means anything.
	Tenants() []schedq.TenantStats
}
