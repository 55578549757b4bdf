package app

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/clock"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/scheduler"
)

// slowPreBind is an out-of-tree PreBind plugin that has work for every
// pod and holds its first PreBind until release is closed, whatever the
// context says (as a plugin in the middle of an API write may).
type slowPreBind struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	ended   bool
}

func (*slowPreBind) Name() string { return "SlowPreBind" }

func (p *slowPreBind) PreBindPreFlight(context.Context, fwk.CycleState, *v1.Pod, string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	return nil, nil
}

func (p *slowPreBind) PreBind(context.Context, fwk.CycleState, *v1.Pod, string) *fwk.Status {
	p.once.Do(func() { close(p.entered) })
	<-p.release
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
	return nil
}

// quietReporter reports nothing.
type quietReporter struct{}

func (quietReporter) Unschedulable(context.Context, *v1.Pod, string, string, func() scheduler.FailureRecord) {
}
func (quietReporter) Scheduled(context.Context, *v1.Pod, string)           {}
func (quietReporter) Warn(context.Context, runtime.Object, string, string) {}

// TestTermEndsAfterItsPreBinds: a term whose context ends while a pod's
// PreBind plugins run (on the binding's goroutine) does not end before
// that binding has: the lease is released, and a successor starts, only
// once the term's bindings have ended, PreBind included.
func TestTermEndsAfterItsPreBinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &slowPreBind{entered: make(chan struct{}), release: make(chan struct{})}
		cfg, err := profile.Default()
		if err != nil {
			t.Fatal(err)
		}
		prof := &cfg.Profiles[0]
		prof.Plugins.PreBind.Enabled = append(prof.Plugins.PreBind.Enabled, config.Plugin{Name: "SlowPreBind"})
		extra := frameworkruntime.Registry{"SlowPreBind": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return slow, nil }}
		fw, qcfg, q := frameworkAndQueue(t, prof, extra)
		c := scheduler.NewCache()
		h := &scheduler.Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
		h.AddNode(testNode("n1", "2"))
		h.AddPod(testPod("p", "schedq", "1"))
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		tm := &terms{
			queues: &switchQueue{cur: q}, cache: c, handlers: h, qcfg: qcfg, client: fakeCluster(),
			backoff: newOutageBackoff(clock.RealClock{}), state: &state{}, log: log, reporter: quietReporter{},
			opts: scheduler.Options{Profiles: []*profile.Framework{fw}, Logger: log},
		}
		ctx, cancel := context.WithCancel(t.Context())
		ended := make(chan struct{})
		go func() {
			tm.run(ctx)
			close(ended)
		}()
		<-slow.entered
		cancel()
		synctest.Wait() // everything else has settled
		select {
		case <-ended:
			t.Error("the term ended while a binding of its was in PreBind")
		default:
		}
		close(slow.release)
		<-ended
		slow.mu.Lock()
		defer slow.mu.Unlock()
		if !slow.ended {
			t.Fatal("PreBind never ended")
		}
	})
}

// frameworkAndQueue builds kube-scheduler's framework of prof (with the
// out-of-tree plugins of extra) and a queue with its hints (and the
// queue's configuration), both closed when the test ends.
func frameworkAndQueue(t *testing.T, prof *config.KubeSchedulerProfile, extra frameworkruntime.Registry) (*profile.Framework, schedq.Config[types.NamespacedName, *v1.Pod], *schedq.Queue[types.NamespacedName, *v1.Pod]) {
	t.Helper()
	fw, err := profile.NewFrameworkOn(t.Context(), prof, profile.Setup{Snapshot: backendcache.NewEmptySnapshot(), Plugins: extra})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fw.Close() })
	qcfg := scheduler.QueueConfig()
	if err := scheduler.UseFrameworkHints(t.Context(), &qcfg, fw, klog.Background()); err != nil {
		t.Fatal(err)
	}
	q, err := schedq.New(qcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return fw, qcfg, q
}
