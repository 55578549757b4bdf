package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// bindProbe is an out-of-tree Reserve and PreBind plugin that records
// what the framework path calls, in order; PreBind fails for pods
// labelled fail=prebind, Reserve rejects those labelled fail=reserve.
type bindProbe struct {
	mu    sync.Mutex
	calls []string
}

func (p *bindProbe) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, s)
}

func (p *bindProbe) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

func (p *bindProbe) Name() string { return "BindProbe" }
func (p *bindProbe) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	p.record("reserve " + pod.Name + " " + node)
	if pod.Labels["fail"] == "reserve" {
		return fwk.NewStatus(fwk.Unschedulable, "no room in the probe")
	}
	return nil
}
func (p *bindProbe) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	p.record("unreserve " + pod.Name)
}
func (p *bindProbe) PreBindPreFlight(context.Context, fwk.CycleState, *v1.Pod, string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	return nil, nil
}
func (p *bindProbe) PreBind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	p.record("prebind " + pod.Name)
	switch pod.Labels["fail"] {
	case "prebind":
		return fwk.AsStatus(errAttach)
	case "prebind-notfound":
		return fwk.AsStatus(fmt.Errorf("binding volumes: %w", apierrors.NewNotFound(v1.Resource("persistentvolumeclaims"), "default/data")))
	case "prebind-conflict":
		return fwk.AsStatus(fmt.Errorf("binding volumes: %w", apierrors.NewConflict(v1.Resource("persistentvolumes"), "pv-data", errors.New("the object has been modified"))))
	}
	return nil
}

var errAttach = errors.New("volume attach failed")

// chanBinder binds at once, from whatever goroutine calls it, and tells
// bound of each pod it bound.
type chanBinder struct{ bound chan string }

func (b chanBinder) Bind(_ context.Context, p *v1.Pod, node string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	done(nil)
	b.bound <- p.Name + " " + node
}

func newProbeFixture(t *testing.T) (*fixture, *bindProbe, chanBinder) {
	t.Helper()
	probe := &bindProbe{}
	extra := frameworkruntime.Registry{"BindProbe": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return probe, nil }}
	f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.Reserve.Enabled = append(p.Plugins.Reserve.Enabled, config.Plugin{Name: "BindProbe"})
		p.Plugins.PreBind.Enabled = append(p.Plugins.PreBind.Enabled, config.Plugin{Name: "BindProbe"})
	})
	b := chanBinder{bound: make(chan string, 4)}
	f.s.binder = b
	f.h.AddNode(zonedNode("n1", "a"))
	return f, probe, b
}

// TestFrameworkPreBindThenBind: Reserve runs in the cycle, PreBind on the
// binding's goroutine, and the binding only after it.
func TestFrameworkPreBindThenBind(t *testing.T) {
	f, probe, b := newProbeFixture(t)
	f.h.AddPod(pod("ok", 100))
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("%+v", out)
	}
	select {
	case got := <-b.bound:
		if got != "ok n1" {
			t.Fatalf("bound %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no binding")
	}
	if got, want := probe.seen(), []string{"reserve ok n1", "prebind ok"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}

// TestFrameworkPreBindFailure: a PreBind error is a failed binding: no
// bind, Unreserve, the assumption forgotten, the pod reported and back in
// the queue with backoff.
func TestFrameworkPreBindFailure(t *testing.T) {
	f, probe, b := newProbeFixture(t)
	p := pod("attach", 100)
	p.Labels = map[string]string{"fail": "prebind"}
	f.h.AddPod(p)
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("%+v", out)
	}
	// PreBind runs on a goroutine of its own, which fails the binding and
	// gives the pod back before it ends: Wait waits for it.
	f.s.Wait()
	if _, loc, _ := f.q.Get(framework.Key(p)); loc != schedq.InBackoff {
		t.Fatalf("the pod is %v, want back in the queue with backoff", loc)
	}
	if got, want := probe.seen(), []string{"reserve attach n1", "prebind attach", "unreserve attach"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if _, ok := f.c.NodeOf(framework.Key(p)); ok {
		t.Fatal("still assumed")
	}
	if len(f.r.failures) != 1 || !strings.Contains(f.r.failures[0], "volume attach failed") {
		t.Fatalf("reported %v", f.r.failures)
	}
	select {
	case got := <-b.bound:
		t.Fatalf("bound %q", got)
	default:
	}
}

// TestFrameworkPreBindAPIErrorRetriesThePod: a PreBind that fails with an
// API error about its own objects (VolumeBinding's claim not found, a
// conflict updating a volume) fails the binding as any PreBind error
// does: the pod is unreserved, reported and back in the queue. Before,
// the error was taken for the pod's binding's (the pod gone, or bound
// elsewhere), and the pod was dropped, in no queue and never retried.
func TestFrameworkPreBindAPIErrorRetriesThePod(t *testing.T) {
	for _, tc := range []struct{ name, fail, want string }{
		{"claim not found", "prebind-notfound", `persistentvolumeclaims "default/data" not found`},
		{"conflict on a volume", "prebind-conflict", "the object has been modified"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, probe, _ := newProbeFixture(t)
			p := pod("vol", 100)
			p.Labels = map[string]string{"fail": tc.fail}
			f.h.AddPod(p)
			if out := f.once(); out.Result != Scheduled {
				t.Fatalf("%+v", out)
			}
			f.s.Wait()
			if _, loc, ok := f.q.Get(framework.Key(p)); !ok || loc != schedq.InBackoff {
				t.Fatalf("the pod is %v (queued %v), want back in the queue with backoff", loc, ok)
			}
			if got := probe.seen(); !slices.Contains(got, "unreserve vol") {
				t.Fatalf("calls %v, want an Unreserve", got)
			}
			if len(f.r.failures) != 1 || !strings.Contains(f.r.failures[0], tc.want) {
				t.Fatalf("reported %v, want the PreBind failure", f.r.failures)
			}
		})
	}
}

// TestFrameworkReserveRejects: a Reserve rejection unreserves, forgets the
// pod and fails it as unschedulable by that plugin, with upstream's
// message for the one node.
func TestFrameworkReserveRejects(t *testing.T) {
	f, probe, _ := newProbeFixture(t)
	p := pod("full", 100)
	p.Labels = map[string]string{"fail": "reserve"}
	f.h.AddPod(p)
	out := f.once()
	if out.Result != Unschedulable || out.Message != "0/1 nodes are available: 1 no room in the probe." || !slices.Equal(out.Plugins, []string{"BindProbe"}) {
		t.Fatalf("%+v", out)
	}
	if got, want := probe.seen(), []string{"reserve full n1", "unreserve full"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if _, ok := f.c.NodeOf(framework.Key(p)); ok {
		t.Fatal("still assumed")
	}
}

// TestFrameworkNominatedPodsKeepTheirRoom: a pod of higher priority
// nominated to a node (read from the queue before the cycle) keeps its
// room there from a lower-priority pod.
func TestFrameworkNominatedPodsKeepTheirRoom(t *testing.T) {
	f := newFWFixture(t, nil, nil)
	f.h.AddNode(zonedNode("n1", "a")) // 8 CPUs
	small := pod("small", 1000)
	f.h.AddPod(small)
	info, ok := tryPop(f.q)
	if !ok {
		t.Fatal("nothing to pop")
	}
	big := pod("big", 7500)
	prio := int32(100)
	big.Spec.Priority = &prio
	f.h.AddPod(big)
	if err := f.q.Nominate(framework.Key(big), "n1"); err != nil {
		t.Fatal(err)
	}
	out := f.s.ScheduleOne(context.Background(), info)
	if out.Result != Unschedulable || !slices.Equal(out.Plugins, []string{"NodeResourcesFit"}) || !strings.Contains(out.Message, "Insufficient cpu") {
		t.Fatalf("%+v, want Insufficient cpu: the nominated pod's room", out)
	}
}
