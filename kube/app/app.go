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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/plugins"
	"github.com/schedq/schedq/kube/scheduler"
	"github.com/schedq/schedq/metrics"
)

// Options configure the scheduler. The command's flags fill them.
type Options struct {
	Kubeconfig    string // empty: as kubectl finds it (see Config)
	SchedulerName string
	Address       string // HTTP: /metrics, /healthz, /readyz, /debug/queue
	Scoring       plugins.ScoringStrategy
	// PercentageOfNodesToScore: see scheduler.Options.
	PercentageOfNodesToScore int

	LeaderElect    bool
	LeaseNamespace string
	LeaseName      string
	Identity       string // default: hostname_pid
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration

	QPS   float32
	Burst int

	Logger *slog.Logger
}

// Run runs the scheduler until ctx ends (SIGTERM) or leadership is lost.
// It returns an error that names the problem if it cannot start.
func Run(ctx context.Context, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg, err := Config(o.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	cfg.UserAgent = "schedq/" + o.SchedulerName
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if err := reachable(ctx, client, cfg.Host); err != nil {
		return err
	}
	// Events get a client of their own, with its own rate limit, so that a
	// burst of events never delays bindings (as kube-scheduler does).
	eventClient, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	return run(ctx, client, eventClient, o, log)
}

// run runs the scheduler on client (a real one, or a fake in tests).
func run(ctx context.Context, client, eventClient kubernetes.Interface, o Options, log *slog.Logger) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	profile := framework.Profile(plugins.Default(o.Scoring))
	rec := metrics.New(metrics.Options{Profile: o.SchedulerName})
	qcfg := scheduler.QueueConfig(profile)
	qcfg.Recorder = rec
	q, err := schedq.New(qcfg)
	if err != nil {
		return err
	}
	if err := rec.Register(reg, q); err != nil {
		return err
	}
	sm, err := scheduler.NewMetrics(reg, o.SchedulerName)
	if err != nil {
		return err
	}

	factory := informers.NewSharedInformerFactory(client, 0)
	c := scheduler.NewCache()
	h := &scheduler.Handlers{Queue: q, Cache: c, SchedulerName: o.SchedulerName, Logger: log, AffinityMatch: plugins.MatchesRequiredAffinity}
	others := map[schedq.Resource]cache.SharedIndexInformer{
		schedq.PersistentVolume:      factory.Core().V1().PersistentVolumes().Informer(),
		schedq.PersistentVolumeClaim: factory.Core().V1().PersistentVolumeClaims().Informer(),
		schedq.StorageClass:          factory.Storage().V1().StorageClasses().Informer(),
		schedq.CSINode:               factory.Storage().V1().CSINodes().Informer(),
		schedq.Service:               factory.Core().V1().Services().Informer(),
	}
	handlersSynced, err := h.Register(factory.Core().V1().Pods().Informer(), factory.Core().V1().Nodes().Informer(),
		factory.Core().V1().Namespaces().Informer(), others)
	if err != nil {
		return err
	}

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: eventClient.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	binder := scheduler.NewAPIBinder(client, 0)
	s := scheduler.New(q, c, binder,
		scheduler.APIReporter{Client: client, Recorder: broadcaster.NewRecorder(scheme.Scheme, o.SchedulerName), Logger: log},
		scheduler.Options{Profile: profile, PercentageOfNodesToScore: o.PercentageOfNodesToScore, Metrics: sm, Logger: log})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := &state{}
	if o.Address != "" {
		srv, err := serve(o.Address, reg, q, st, log)
		if err != nil {
			return err
		}
		defer func() {
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			srv.Shutdown(sctx)
		}()
	}

	// On start and on failover every pending pod of ours is listed into
	// activeQ by the informers: the queue is rebuilt from the API server.
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), handlersSynced) {
		return shutdownErr(ctx)
	}
	st.synced.Store(true)
	log.Info("caches synced", "nodes", c.NodeCount(), "pending", q.Counts().Pending())
	go q.Run(ctx)

	// loop schedules until its context ends; work counts it, so that the
	// lease is released only once it and its bindings have stopped.
	var work sync.WaitGroup
	loop := func(ctx context.Context) {
		work.Add(1)
		defer work.Done()
		st.leading.Store(true)
		log.Info("scheduling", "scheduler", o.SchedulerName)
		for {
			info, err := q.Pop(ctx)
			if err != nil {
				return
			}
			s.ScheduleOne(ctx, info)
		}
	}
	defer q.Close()
	if !o.LeaderElect {
		loop(ctx)
		binder.Wait()
		return shutdownErr(ctx)
	}
	identity := o.Identity
	if identity == "" {
		host, _ := os.Hostname()
		identity = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1ObjectMeta(o.LeaseNamespace, o.LeaseName),
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	lost := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.SchedulerName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				// Stop on SIGTERM as well as on a lost lease.
				lctx, cancel := context.WithCancel(lctx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				loop(lctx)
			},
			OnStoppedLeading: func() {
				st.leading.Store(false)
				close(lost)
			},
			OnNewLeader: func(id string) { log.Info("leader", "identity", id, "me", id == identity) },
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	log.Info("waiting for the lease", "lease", o.LeaseNamespace+"/"+o.LeaseName, "identity", identity)
	// Leader election runs on a context of its own, cancelled (and the
	// lease released) only after the loop and its bindings have stopped,
	// so that a new leader never overlaps this one's last cycle.
	leCtx, leCancel := context.WithCancel(context.Background())
	defer leCancel()
	go func() {
		<-ctx.Done()
		work.Wait()
		binder.Wait()
		leCancel()
	}()
	le.Run(leCtx)
	if ctx.Err() != nil {
		// Shutting down (SIGTERM): the lease was released on purpose.
		return shutdownErr(ctx)
	}
	select {
	case <-lost:
		return errors.New("lost the leader lease")
	default:
		return errors.New("leader election ended")
	}
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
	Dump() schedq.Dump
	Explain(key types.NamespacedName) (schedq.Explanation, error)
}

func serve(addr string, reg *prometheus.Registry, q queueView, st *state, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--address %s: %w", addr, err)
	}
	srv := &http.Server{Handler: Handler(reg, q, st.ready), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http", "err", err)
		}
	}()
	log.Info("serving", "address", ln.Addr().String())
	return srv, nil
}
