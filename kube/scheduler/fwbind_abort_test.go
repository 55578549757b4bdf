package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// holdProbe is an out-of-tree Reserve and PreBind plugin that keeps a
// reservation per pod, as DynamicResources and VolumeBinding do, and
// calls hook (if set) in the middle of Reserve or PreBind: the point a
// node deletion arrives at. It records each call as it ends.
type holdProbe struct {
	mu    sync.Mutex
	calls []string
	held  map[string]bool
	hook  map[string]func() // by "reserve" or "prebind"
	fail  map[string]bool   // "prebind": PreBind fails (once hook has run)
	unres chan struct{}     // a send per Unreserve
}

func (p *holdProbe) Name() string { return "HoldProbe" }

func (p *holdProbe) end(call, pod string, hold bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
	if hold {
		p.held[pod] = true
	} else if call == "unreserve" {
		delete(p.held, pod)
	}
}

func (p *holdProbe) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	if h := p.hook["reserve"]; h != nil {
		h()
	}
	p.end("reserve", pod.Name, true)
	return nil
}

func (p *holdProbe) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	p.end("unreserve", pod.Name, false)
	p.unres <- struct{}{}
}

func (p *holdProbe) PreBindPreFlight(context.Context, fwk.CycleState, *v1.Pod, string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	return nil, nil
}

func (p *holdProbe) PreBind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	if h := p.hook["prebind"]; h != nil {
		h()
	}
	p.end("prebind", pod.Name, false)
	if p.fail["prebind"] {
		return fwk.AsStatus(errors.New("the node is gone"))
	}
	return nil
}

// TestFrameworkNodeDeletedWhileReserved: a node deleted while the pod's
// Reserve or PreBind plugins are running on it (from the informer's
// goroutine) aborts the binding; the plugins' reservation is undone once,
// after the plugin that made it has returned, so nothing stays held, and
// the pod goes back to the queue.
func TestFrameworkNodeDeletedWhileReserved(t *testing.T) {
	for _, at := range []string{"reserve", "prebind"} {
		t.Run(at, func(t *testing.T) {
			probe, f, n1 := newHoldFixture(t, nil)
			probe.hook = map[string]func(){at: func() {
				deleteFromInformer(f, n1)
			}}
			p := pod("p", 100)
			f.h.AddPod(p)
			f.once()
			select {
			case <-probe.unres:
			case <-time.After(10 * time.Second):
				t.Fatal("never unreserved")
			}
			f.s.Wait() // the binding requeues the pod after Unreserve
			probe.mu.Lock()
			calls, held := slices.Clone(probe.calls), len(probe.held)
			probe.mu.Unlock()
			want := []string{"reserve", "unreserve"}
			if at == "prebind" {
				want = []string{"reserve", "prebind", "unreserve"}
			}
			if !slices.Equal(calls, want) || held != 0 {
				t.Fatalf("calls %v, %d reservations held; want %v, none held", calls, held, want)
			}
			if _, ok := f.c.NodeOf(framework.Key(p)); ok {
				t.Fatal("still assumed")
			}
			if _, loc, ok := f.q.Get(framework.Key(p)); !ok || loc == schedq.InFlight {
				t.Fatalf("the pod is not back in the queue: %v %v", loc, ok)
			}
		})
	}
}

// TestFrameworkNodeDeletedThenPreBindFails: a node deleted while PreBind
// runs aborts the binding, which requeues the pod; PreBind then failing
// (as a plugin does whose node is gone) must not end the binding a second
// time: one Unreserve, no "binding rejected" report for a pod that is
// back in the queue already (the loop may bind it elsewhere before that
// report lands), and the pod in the queue.
func TestFrameworkNodeDeletedThenPreBindFails(t *testing.T) {
	probe, f, n1 := newHoldFixture(t, map[string]bool{"prebind": true})
	probe.hook = map[string]func(){"prebind": func() {
		deleteFromInformer(f, n1)
	}}
	p := pod("p", 100)
	f.h.AddPod(p)
	f.once()
	f.s.Wait() // the PreBind goroutine has ended its binding
	probe.mu.Lock()
	calls := slices.Clone(probe.calls)
	probe.mu.Unlock()
	if want := []string{"reserve", "prebind", "unreserve"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	if len(f.r.failures) != 0 {
		t.Fatalf("reported %q for a pod the node's deletion requeued", f.r.failures)
	}
	if _, loc, ok := f.q.Get(framework.Key(p)); !ok || loc == schedq.InFlight {
		t.Fatalf("the pod is not back in the queue: %v %v", loc, ok)
	}
}

// goneProbe is a PreBind plugin that, for the pod bound to node gone,
// deletes that node (as the informer's goroutine would) and then fails,
// as a plugin writing to the API about a node that is gone does.
type goneProbe struct {
	gone   string
	delete func()
}

func (p *goneProbe) Name() string { return "GoneProbe" }

func (p *goneProbe) PreBindPreFlight(context.Context, fwk.CycleState, *v1.Pod, string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	return nil, nil
}

func (p *goneProbe) PreBind(_ context.Context, _ fwk.CycleState, _ *v1.Pod, node string) *fwk.Status {
	if node != p.gone {
		return nil
	}
	deleted := make(chan struct{})
	go func() {
		p.delete()
		close(deleted)
	}()
	<-deleted
	return fwk.AsStatus(errors.New("the node is gone"))
}

// TestGangMemberNodeDeletedThenPreBindFails: a group member whose node is
// deleted during its PreBind, which then fails, is counted once in its
// group's tally: it goes back with its group only once every binding of
// the attempt has ended (not while its sibling's is still under way), and
// is reported once.
func TestGangMemberNodeDeletedThenPreBindFails(t *testing.T) {
	f, w := newGangFixture(t)
	a, b := node("a", 1000), node("b", 1000)
	probe := &goneProbe{gone: b.Name, delete: func() { f.h.DeleteNode(b) }}
	extra := frameworkruntime.Registry{"GoneProbe": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return probe, nil }}
	cfg, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := &cfg.Profiles[0]
	prof.Plugins.PreBind.Enabled = append(prof.Plugins.PreBind.Enabled, config.Plugin{Name: "GoneProbe"})
	fw := frameworkWith(t, prof, extra)
	lb := &laterBinder{binds: map[string]string{}}
	f.s = mustNew(t, f.q, f.c, lb, warnReporter{f.r, w}, Options{Profiles: []*profile.Framework{fw}, SyncPreBind: true})
	f.h.AddNode(a)
	f.h.AddNode(b)
	f.h.AddPodGroup(podGroup("g", 2, 0))
	f.addGang("g", 2, 1000)
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("outcome %+v", out)
	}
	if len(lb.held) != 1 {
		t.Fatalf("%d bindings held, want the member on a's", len(lb.held))
	}
	for _, m := range []string{"g-0", "g-1"} {
		if _, _, queued := f.q.Get(framework.Key(pod(m, 0))); queued {
			t.Fatalf("%s is back in the queue while a binding of its attempt is under way", m)
		}
	}
	lb.run()
	onB := "g-0"
	if lb.binds[onB] == a.Name {
		onB = "g-1"
	}
	if loc := f.where(onB); loc != schedq.InBackoff && loc != schedq.InActive && loc != schedq.InUnschedulable {
		t.Fatalf("%s is %v, want back with its group", onB, loc)
	}
	if len(f.r.failures) != 1 || !strings.Contains(f.r.failures[0], "1 of minCount 2 bound") {
		t.Fatalf("reports %q, want one for %s saying 1 of minCount 2 bound", f.r.failures, onB)
	}
}

// TestFrameworkNodeDeletedDuringPreBindUnreservesBeforeRetry: a node
// deleted while a pod's PreBind runs (on the binding's goroutine) must
// not put the pod back in the queue before that binding has undone its
// reservation: else the pod's next cycle reserves again (on another
// node) first, and the late Unreserve of the aborted binding, keyed by
// the same pod (DynamicResources' by its claims), undoes the reservation
// of the binding that goes through.
func TestFrameworkNodeDeletedDuringPreBindUnreservesBeforeRetry(t *testing.T) {
	probe, f, n1 := newHoldFixture(t, nil)
	aborted, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	probe.hook = map[string]func(){"prebind": func() {
		once.Do(func() {
			deleteFromInformer(f, n1)
			close(aborted)
			<-release // PreBind still writing when the deletion is seen
		})
	}}
	p := pod("p", 100)
	key := framework.Key(p)
	f.h.AddPod(p)
	f.once()
	<-aborted
	f.h.AddNode(zonedNode("n2", "a"))
	retried := false
	if _, loc, ok := f.q.Get(key); ok && loc != schedq.InFlight {
		// Back in the queue while the aborted binding still holds its
		// reservation: its backoff ends, and it is tried again.
		if err := f.q.Activate(key); err != nil {
			t.Fatal(err)
		}
		f.once()
		retried = true
	}
	close(release)
	f.s.Wait()
	if !retried {
		if err := f.q.Activate(key); err != nil {
			t.Fatal(err)
		}
		f.once()
		f.s.Wait()
	}
	probe.mu.Lock()
	calls, held := slices.Clone(probe.calls), probe.held["p"]
	probe.mu.Unlock()
	if f.b.binds["p"] != "n2" {
		t.Fatalf("binds %v, want p on n2", f.b.binds)
	}
	first := slices.Index(calls, "unreserve")
	reservedFirst := 0 // Reserves before the aborted binding's Unreserve
	for _, c := range calls[:max(first, 0)] {
		if c == "reserve" {
			reservedFirst++
		}
	}
	if !held || first < 0 || reservedFirst != 1 {
		t.Fatalf("calls %v (reservation of the bound pod held: %v); want the aborted binding's unreserve before the retry's reserve, and the bound pod's reservation held", calls, held)
	}
}

// newHoldFixture is a scheduler whose profile runs holdProbe at Reserve
// and PreBind (failing the calls named in fail), with one node, n1.
func newHoldFixture(t *testing.T, fail map[string]bool) (*holdProbe, *fixture, *v1.Node) {
	t.Helper()
	probe := &holdProbe{held: map[string]bool{}, unres: make(chan struct{}, 4), fail: fail}
	extra := frameworkruntime.Registry{"HoldProbe": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return probe, nil }}
	f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.Reserve.Enabled = append(p.Plugins.Reserve.Enabled, config.Plugin{Name: "HoldProbe"})
		p.Plugins.PreBind.Enabled = append(p.Plugins.PreBind.Enabled, config.Plugin{Name: "HoldProbe"})
	})
	n1 := zonedNode("n1", "a")
	f.h.AddNode(n1)
	return probe, f, n1
}

// deleteFromInformer deletes n from another goroutine, as the node
// informer's handler would, and returns once it is done.
func deleteFromInformer(f *fixture, n *v1.Node) {
	deleted := make(chan struct{})
	go func() {
		f.h.DeleteNode(n)
		close(deleted)
	}()
	<-deleted
}
