package scheduler

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// pendingFilter is an out-of-tree Filter plugin that answers Pending for
// the pods labelled wait=yes (waiting for something that happens by
// itself; no in-tree plugin of kube-scheduler v1.37.2 answers Pending),
// and registers for node label updates with no hint (always Queue).
type pendingFilter struct{}

func (pendingFilter) Name() string { return "PendingFilter" }

func (pendingFilter) Filter(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ fwk.NodeInfo) *fwk.Status {
	if p.Labels["wait"] == "yes" {
		return fwk.NewStatus(fwk.Pending, "waiting for the node's device to come up")
	}
	return nil
}

func (pendingFilter) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.UpdateNodeLabel}}}, nil
}

// frozenClock is a clock that never moves: a backoff never ends.
type frozenClock struct{ t time.Time }

func (c frozenClock) Now() time.Time                       { return c.t }
func (c frozenClock) After(time.Duration) <-chan time.Time { return nil }

// newPendingFixture is newFWFixture with pendingFilter enabled and the
// queue on a frozen clock.
func newPendingFixture(t *testing.T) *fixture {
	t.Helper()
	return newFilterFixture(t, pendingFilter{})
}

// newFilterFixture is newFWFixture with the Filter plugin pl enabled
// besides the default profile's, and the queue on a frozen clock.
func newFilterFixture(t *testing.T, pl fwk.FilterPlugin) *fixture {
	t.Helper()
	cfg, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := &cfg.Profiles[0]
	prof.Plugins.Filter.Enabled = append(prof.Plugins.Filter.Enabled, config.Plugin{Name: pl.Name()})
	extra := frameworkruntime.Registry{pl.Name(): func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return pl, nil
	}}
	fw := frameworkWith(t, prof, extra)
	qc := QueueConfig()
	if err := UseFrameworkHints(context.Background(), &qc, fw, klog.Background()); err != nil {
		t.Fatal(err)
	}
	qc.Clock = frozenClock{time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
	q, err := schedq.New(qc)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache()
	f := &fixture{t: t, q: q, c: c, b: &syncBinder{}, r: &recReporter{}}
	f.h = &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	f.s = mustNew(t, q, c, f.b, f.r, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 1))})
	return f
}

// TestPendingMemberWaitsOnItsPlugin: a pod that a filter leaves Pending
// waits on that plugin (Failure.WaitingOn), so that the plugin's event
// queues it at once, not after backoff, as kube-scheduler v1.37.2 queues
// a pod whose PendingPlugins hint says Queue (queueImmediately). A group
// whose member a filter leaves Pending waits on the plugin alike
// (kube-scheduler's pod group keeps its members' PendingPlugins). Before,
// the group attempt kept only the rejecting plugins, and a group whose
// only rejection was Pending failed as an error.
func TestPendingMemberWaitsOnItsPlugin(t *testing.T) {
	waiting := func(_ int, p *v1.Pod) { p.Labels = map[string]string{"wait": "yes"} }
	for _, c := range []struct {
		name string
		add  func(f *fixture)
		pod  string // the pod whose place is checked
	}{
		{"lone pod", func(f *fixture) {
			p := pod("lone", 100)
			waiting(0, p)
			f.h.AddPod(p)
		}, "lone"},
		{"every member pending", func(f *fixture) { f.addFWGang("g", 2, 2, waiting) }, "g-0"},
		{"one member pending", func(f *fixture) {
			f.addFWGang("g", 2, 2, func(i int, p *v1.Pod) {
				if i == 1 {
					waiting(i, p)
				}
			})
		}, "g-0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newPendingFixture(t)
			n := zonedNode("n1", "a")
			f.h.AddNode(n)
			c.add(f)
			out := f.once()
			if out.Result != Unschedulable || !slices.Contains(out.Pending, "PendingFilter") {
				t.Fatalf("outcome %+v, want Unschedulable pending on PendingFilter", out)
			}
			x, err := f.q.Explain(framework.Key(pod(c.pod, 0)))
			if err != nil || !slices.Contains(x.WaitingOn, "PendingFilter") {
				t.Fatalf("%s waits on %v, rejected by %v (%v); want PendingFilter among the first", c.pod, x.WaitingOn, x.RejectedBy, err)
			}
			if len(f.b.binds) != 0 {
				t.Fatalf("binds %v", f.b.binds)
			}
			up := n.DeepCopy()
			up.Labels["device"] = "up"
			f.h.UpdateNode(n, up)
			if loc := f.where(c.pod); loc != schedq.InActive {
				t.Fatalf("after the plugin's event %s is %v, want active at once", c.pod, loc)
			}
		})
	}
}
