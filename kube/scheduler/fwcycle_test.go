package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

const zoneLabel = "topology.kubernetes.io/zone"

// newFWFixture is the scheduler on kube-scheduler's framework: the
// default profile, changed by mutate, with the plugins of extra; its
// queue takes the profile's hints and gates (UseFrameworkHints).
func newFWFixture(t *testing.T, extra frameworkruntime.Registry, mutate func(*config.KubeSchedulerProfile)) *fixture {
	t.Helper()
	cfg, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := &cfg.Profiles[0]
	if mutate != nil {
		mutate(prof)
	}
	fw := frameworkWith(t, prof, extra)
	q := queueOn(t, fw)
	c := NewCache()
	f := &fixture{t: t, q: q, c: c, b: &syncBinder{}, r: &recReporter{}}
	f.h = &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	f.s = mustNew(t, q, c, f.b, f.r, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 1))})
	return f
}

// queueOn is a queue with QueueConfig and fw's plugins' hints and gates,
// as the scheduler's queue has them.
func queueOn(t testing.TB, fw *profile.Framework) *schedq.Queue[types.NamespacedName, *v1.Pod] {
	t.Helper()
	qc := QueueConfig()
	if err := UseFrameworkHints(context.Background(), &qc, fw, klog.Background()); err != nil {
		t.Fatal(err)
	}
	q, err := schedq.New(qc)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// defaultFramework builds kube-scheduler's framework with its default
// profile over an empty snapshot, closed when the test ends.
func defaultFramework(t testing.TB) *profile.Framework {
	t.Helper()
	cfg, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	fw, err := profile.NewFrameworkOn(context.Background(), &cfg.Profiles[0], profile.Setup{Snapshot: backendcache.NewEmptySnapshot()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fw.Close() })
	return fw
}

func zonedNode(name, zone string) *v1.Node {
	n := node(name, 8000)
	n.Labels = map[string]string{zoneLabel: zone, "kubernetes.io/hostname": name}
	return n
}

func withHostPort(p *v1.Pod, port int32) *v1.Pod {
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: port}}
	return p
}

func TestFrameworkNodePortsKeepsSecondPodOff(t *testing.T) {
	f := newFWFixture(t, nil, nil)
	f.h.AddNode(zonedNode("n1", "a"))
	f.h.AddNode(zonedNode("n2", "a"))
	f.h.AddPod(withHostPort(pod("first", 100), 8080))
	first := f.once()
	f.h.AddPod(withHostPort(pod("second", 100), 8080))
	second := f.once()
	if first.Result != Scheduled || second.Result != Scheduled || first.Node == second.Node {
		t.Fatalf("first %+v, second %+v: both on one node or not placed", first, second)
	}
	f.h.AddPod(withHostPort(pod("third", 100), 8080))
	third := f.once()
	want := "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports."
	if third.Result != Unschedulable || third.Message != want || !slices.Equal(third.Plugins, []string{"NodePorts"}) {
		t.Fatalf("third: %+v, want Unschedulable by NodePorts: %q", third, want)
	}
	if want := []string{"node(s) didn't have free ports for the requested pod ports"}; !slices.Equal(third.Reasons, want) {
		t.Fatalf("third's reasons %q, want %q", third.Reasons, want)
	}
	if _, loc, _ := f.q.Get(framework.Key(pod("third", 0))); loc != schedq.InUnschedulable {
		t.Fatalf("third is %v, want parked", loc)
	}
}

func TestFrameworkTopologySpreadOverZones(t *testing.T) {
	f := newFWFixture(t, nil, nil)
	zone := map[string]string{}
	for _, n := range []*v1.Node{zonedNode("a1", "a"), zonedNode("a2", "a"), zonedNode("a3", "a"), zonedNode("b1", "b")} {
		f.h.AddNode(n)
		zone[n.Name] = n.Labels[zoneLabel]
	}
	perZone := map[string]int{}
	for i := range 4 {
		p := pod(fmt.Sprint("web-", i), 100)
		p.Labels = map[string]string{"app": "web"}
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: zoneLabel,
			WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		f.h.AddPod(p)
		out := f.once()
		if out.Result != Scheduled {
			t.Fatalf("%s: %+v", p.Name, out)
		}
		perZone[zone[out.Node]]++
	}
	if perZone["a"] != 2 || perZone["b"] != 2 {
		t.Fatalf("replicas per zone %v, want 2 and 2", perZone)
	}
}

func TestFrameworkMissingClaimIsUnschedulable(t *testing.T) {
	f := newFWFixture(t, nil, nil)
	f.h.AddNode(zonedNode("n1", "a"))
	p := pod("claims", 100)
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "missing"}}}}
	f.h.AddPod(p)
	out := f.once()
	// VolumeBinding's reason; VolumeRestrictions, whose PreFilter runs
	// first in the default profile, gives it first, as in kube-scheduler.
	want := `0/1 nodes are available: persistentvolumeclaim "missing" not found.`
	if out.Result != Unschedulable || out.Message != want || !slices.Equal(out.Plugins, []string{"VolumeRestrictions"}) {
		t.Fatalf("outcome %+v, want Unschedulable by VolumeRestrictions: %q", out, want)
	}
	if want := []string{`persistentvolumeclaim "missing" not found`}; !slices.Equal(out.Reasons, want) {
		t.Fatalf("reasons %q, want %q", out.Reasons, want)
	}
	if len(f.b.binds) != 0 {
		t.Fatalf("bound %v", f.b.binds)
	}
	// Explain says why, and what wakes the pod: a claim's arrival.
	x, err := f.q.Explain(framework.Key(p))
	if err != nil || x.Location != schedq.InUnschedulable || x.Message != want || !slices.Equal(x.RejectedBy, []string{"VolumeRestrictions"}) ||
		!slices.Contains(x.WakingEvents, "VolumeRestrictions:PersistentVolumeClaimAdd") {
		t.Fatalf("Explain %+v, want parked by VolumeRestrictions with %q until PersistentVolumeClaimAdd", x, want)
	}
	if len(f.r.failures) != 1 || !strings.Contains(f.r.failures[0], want) {
		t.Fatalf("reported %q, want %q", f.r.failures, want)
	}
}

// failingFilter is an out-of-tree filter that returns an error for pods
// labelled fail=error and panics for fail=panic.
type failingFilter struct{}

func (failingFilter) Name() string { return "FailingFilter" }
func (failingFilter) Filter(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ fwk.NodeInfo) *fwk.Status {
	switch p.Labels["fail"] {
	case "error":
		return fwk.AsStatus(errors.New("backend unreachable"))
	case "panic":
		panic("failing filter")
	}
	return nil
}

func TestFrameworkPluginErrorFailsOnlyThatPod(t *testing.T) {
	extra := frameworkruntime.Registry{"FailingFilter": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return failingFilter{}, nil
	}}
	f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "FailingFilter"})
	})
	f.h.AddNode(zonedNode("n1", "a"))
	for _, c := range []struct{ name, fail, want string }{
		{"errs", "error", "backend unreachable"},
		{"panics", "panic", "panicked: failing filter"},
	} {
		p := pod(c.name, 100)
		p.Labels = map[string]string{"fail": c.fail}
		f.h.AddPod(p)
		out := f.once()
		if out.Result != Error || !strings.Contains(out.Message, c.want) {
			t.Fatalf("%s: %+v, want an Error with %q", c.name, out, c.want)
		}
		if _, loc, _ := f.q.Get(framework.Key(p)); loc != schedq.InBackoff {
			t.Fatalf("%s is %v, want backoff", c.name, loc)
		}
		f.h.AddPod(pod("ok-"+c.name, 100))
		if out := f.once(); out.Result != Scheduled || out.Node != "n1" {
			t.Fatalf("the next pod: %+v", out)
		}
	}
	if _, ok := f.c.NodeOf(types.NamespacedName{Namespace: "default", Name: "errs"}); ok {
		t.Fatal("a failed pod is assumed")
	}
}

// TestFrameworkCyclesWithConcurrentWriters schedules pods on the
// framework path while another goroutine adds and removes nodes and
// bound pods through the handlers: under -race, a plugin reading what a
// writer changes would be reported. Every pod ends scheduled or failed,
// and no pod is placed on a node the cache does not know.
func TestFrameworkCyclesWithConcurrentWriters(t *testing.T) {
	f := newFWFixture(t, nil, nil)
	for i := range 4 {
		f.h.AddNode(zonedNode(fmt.Sprint("n", i), "a"))
	}
	const pods = 40
	for i := range pods {
		f.h.AddPod(pod(fmt.Sprint("p", i), 10))
	}
	stop := make(chan struct{})
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprint("x", i%3)
			f.h.AddNode(zonedNode(name, "b"))
			other := pod(fmt.Sprint("other", i%5), 10)
			other.Spec.SchedulerName, other.Spec.NodeName = "default-scheduler", name
			f.h.AddPod(other)
			f.h.DeletePod(other)
			f.h.DeleteNode(zonedNode(name, "b"))
		}
	}()
	scheduled := f.scheduleUpTo(pods)
	close(stop)
	<-writer
	if scheduled == 0 {
		t.Fatal("no pod scheduled")
	}
	for name, node := range f.b.binds {
		if !strings.HasPrefix(node, "n") && !strings.HasPrefix(node, "x") {
			t.Fatalf("%s bound to %q", name, node)
		}
	}
}

// writingFilter is an out-of-tree filter that writes to the cache and the
// queue while it runs, as informers and the wake budget do meanwhile.
type writingFilter struct{ f **fixture }

func (writingFilter) Name() string { return "WritingFilter" }
func (w writingFilter) Filter(_ context.Context, _ fwk.CycleState, p *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	f := *w.f
	f.h.AddNode(zonedNode("added-by-"+ni.Node().Name, "b")) // the cache's write lock, then the queue's
	other := pod("other-"+ni.Node().Name, 10)
	other.Spec.SchedulerName, other.Spec.NodeName = "default-scheduler", ni.Node().Name
	f.h.AddPod(other)
	return nil
}

// TestFrameworkPluginsRunWithNoLockHeld: a filter that takes the cache's
// write lock and the queue's lock completes: the cycle runs its plugins
// holding no lock of schedq's.
func TestFrameworkPluginsRunWithNoLockHeld(t *testing.T) {
	var f *fixture
	extra := frameworkruntime.Registry{"WritingFilter": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return writingFilter{f: &f}, nil
	}}
	f = newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "WritingFilter"})
	})
	f.h.AddNode(zonedNode("n1", "a"))
	f.h.AddPod(pod("p", 100))
	info, ok := tryPop(f.q)
	if !ok {
		t.Fatal("nothing to pop")
	}
	done := make(chan Outcome, 1)
	go func() { done <- f.s.ScheduleOne(context.Background(), info) }()
	select {
	case out := <-done:
		if out.Result != Scheduled || out.Node != "n1" {
			t.Fatalf("%+v", out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cycle is blocked: a plugin waited for a lock the cycle holds")
	}
	if f.c.NodeCount() != 2 {
		t.Fatalf("%d nodes, want n1 and the one the filter added", f.c.NodeCount())
	}
}

// overflowCPU makes p request 1e18 cpus, which overflow int64 milli-cpus.
func overflowCPU(_ int, p *v1.Pod) {
	p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("1e18")
}

// TestFrameworkOverflowingRequestsFitNowhere: kube-scheduler's
// NodeResourcesFit reads a request of 1e18 cpus as a small number and
// would bind it; schedq refuses it, alone or in a gang, with the reason
// of its own accounting (framework.PodRequests), and parks it behind
// NodeResourcesFit.
func TestFrameworkOverflowingRequestsFitNowhere(t *testing.T) {
	const reason = "invalid resource request cpu=1e18: overflows int64 milli-units"
	t.Run("lone", func(t *testing.T) {
		f := newFWFixture(t, nil, nil)
		f.h.AddNode(zonedNode("n1", "a"))
		p := pod("huge", 100)
		overflowCPU(0, p)
		f.h.AddPod(p)
		out := f.once()
		if out.Result != Unschedulable || !strings.Contains(out.Message, "0/1 nodes are available: "+reason) ||
			!slices.Equal(out.Plugins, []string{"NodeResourcesFit"}) || len(f.b.binds) != 0 {
			t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
		}
		if loc := f.where("huge"); loc != schedq.InUnschedulable {
			t.Fatalf("huge is %v, want parked", loc)
		}
	})
	t.Run("gang", func(t *testing.T) {
		f := newFWFixture(t, nil, nil)
		f.h.AddNode(zonedNode("n1", "a"))
		f.h.AddNode(zonedNode("n2", "a"))
		f.addFWGang("g", 2, 2, func(i int, p *v1.Pod) {
			if i == 1 {
				overflowCPU(i, p)
			}
		})
		out := f.once()
		if out.Result != Unschedulable || !strings.Contains(out.Message, reason) || len(f.b.binds) != 0 {
			t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
		}
	})
}

// frameworkWith builds kube-scheduler's framework with prof and the
// out-of-tree plugins extra over an empty snapshot, closed when the test
// ends.
func frameworkWith(t testing.TB, prof *config.KubeSchedulerProfile, extra frameworkruntime.Registry) *profile.Framework {
	t.Helper()
	fw, err := profile.NewFrameworkOn(context.Background(), prof, profile.Setup{Snapshot: backendcache.NewEmptySnapshot(), Plugins: extra})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fw.Close() })
	return fw
}
