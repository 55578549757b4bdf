package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedq/schedq"
)

// addFWGang adds a PodGroup of minCount and n members (group-0...),
// each changed by mutate if not nil.
func (f *fixture) addFWGang(group string, minCount int32, n int, mutate func(int, *v1.Pod)) {
	f.h.AddPodGroup(podGroup(group, minCount, 0))
	for i := range n {
		p := memberPod(fmt.Sprintf("%s-%d", group, i), group, 100)
		if mutate != nil {
			mutate(i, p)
		}
		f.h.AddPod(p)
	}
}

// snapshotPods lists the pods the framework's snapshot holds, as
// name@node, sorted.
func (f *fixture) snapshotPods() []string {
	f.t.Helper()
	all, err := f.s.o.Profiles[0].Snapshot().NodeInfos().List()
	if err != nil {
		f.t.Fatal(err)
	}
	var got []string
	for _, ni := range all {
		for _, p := range ni.GetPods() {
			got = append(got, p.GetPod().Name+"@"+ni.Node().Name)
		}
	}
	slices.Sort(got)
	return got
}

func hostPortMember(_ int, p *v1.Pod) { withHostPort(p, 8080) }

// TestFrameworkGangHostPortsAllOrNothing: NodePorts sees the members
// placed before in the snapshot, so the 4th of a gang asking for
// hostPort 8080 fits none of 3 nodes; with minCount 4 none is bound, with
// minCount 3 three are, on three nodes, and the 4th goes back.
func TestFrameworkGangHostPortsAllOrNothing(t *testing.T) {
	t.Run("minCount4", func(t *testing.T) {
		f := newFWFixture(t, nil, nil)
		for _, n := range []string{"n1", "n2", "n3"} {
			f.h.AddNode(zonedNode(n, "a"))
		}
		f.addFWGang("ports", 4, 4, hostPortMember)
		out := f.once()
		if out.Result != Unschedulable || len(f.b.binds) != 0 {
			t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
		}
		if !strings.Contains(out.Message, "3 of 4 members fit (0 bound before), minCount 4") ||
			!strings.Contains(out.Message, "didn't have free ports") || !slices.Contains(out.Plugins, "NodePorts") {
			t.Fatalf("outcome %+v", out)
		}
		if n := f.c.GroupPlaced("default/ports"); n != 0 {
			t.Fatalf("%d members assumed", n)
		}
		if got := f.snapshotPods(); len(got) != 0 {
			t.Fatalf("the snapshot keeps the attempt's members: %v", got)
		}
		if loc := f.where("ports-0"); loc != schedq.InUnschedulable {
			t.Fatalf("member is %v, want parked", loc)
		}
	})
	t.Run("minCount3", func(t *testing.T) {
		f := newFWFixture(t, nil, nil)
		for _, n := range []string{"n1", "n2", "n3"} {
			f.h.AddNode(zonedNode(n, "a"))
		}
		f.addFWGang("ports", 3, 4, hostPortMember)
		out := f.once()
		if out.Result != Scheduled || len(f.b.binds) != 3 {
			t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
		}
		nodes := map[string]bool{}
		for _, n := range f.b.binds {
			nodes[n] = true
		}
		if len(nodes) != 3 {
			t.Fatalf("binds %v: not on 3 nodes", f.b.binds)
		}
		if loc := f.where("ports-3"); loc != schedq.InActive {
			t.Fatalf("the 4th member is %v, want back with its group", loc)
		}
	})
}

// TestFrameworkGangZoneSpread: PodTopologySpread (maxSkew 1) counts the
// members placed before: a gang of 4 lands 2 and 2 in zones of 3 and 1
// nodes.
func TestFrameworkGangZoneSpread(t *testing.T) {
	f := newFWFixture(t, nil, nil)
	zone := map[string]string{}
	for _, n := range []*v1.Node{zonedNode("a1", "a"), zonedNode("a2", "a"), zonedNode("a3", "a"), zonedNode("b1", "b")} {
		f.h.AddNode(n)
		zone[n.Name] = n.Labels[zoneLabel]
	}
	f.addFWGang("web", 4, 4, func(_ int, p *v1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: zoneLabel,
			WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	})
	if out := f.once(); out.Result != Scheduled || len(f.b.binds) != 4 {
		t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
	}
	perZone := map[string]int{}
	for _, n := range f.b.binds {
		perZone[zone[n]]++
	}
	if perZone["a"] != 2 || perZone["b"] != 2 {
		t.Fatalf("members per zone %v, want 2 and 2", perZone)
	}
}

// TestFrameworkGangPluginErrorFailsTheAttempt: a filter's error or panic
// on one member fails the group's attempt as an error (back with
// backoff), binds none, leaves the snapshot as it was, and the next cycle
// runs.
func TestFrameworkGangPluginErrorFailsTheAttempt(t *testing.T) {
	extra := frameworkruntime.Registry{"FailingFilter": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return failingFilter{}, nil
	}}
	f := newFWFixture(t, extra, func(p *config.KubeSchedulerProfile) {
		p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "FailingFilter"})
	})
	f.h.AddNode(zonedNode("n1", "a"))
	f.h.AddNode(zonedNode("n2", "a"))
	for _, c := range []struct{ fail, want string }{{"error", "backend unreachable"}, {"panic", "panicked: failing filter"}} {
		group := "g-" + c.fail
		f.addFWGang(group, 3, 3, func(i int, p *v1.Pod) {
			if i == 1 {
				p.Labels = map[string]string{"fail": c.fail}
			}
		})
		out := f.once()
		if out.Result != Error || !strings.Contains(out.Message, c.want) {
			t.Fatalf("%s: outcome %+v", c.fail, out)
		}
		for name := range f.b.binds {
			if strings.HasPrefix(name, group) {
				t.Fatalf("%s: binds %v", c.fail, f.b.binds)
			}
		}
		if loc := f.where(group + "-0"); loc != schedq.InBackoff {
			t.Fatalf("%s: member is %v, want backoff", c.fail, loc)
		}
		for _, p := range f.snapshotPods() {
			if strings.HasPrefix(p, group) {
				t.Fatalf("%s: the snapshot keeps the attempt's members: %v", c.fail, f.snapshotPods())
			}
		}
		f.h.AddPod(pod("ok-"+c.fail, 100))
		if out := f.once(); out.Result != Scheduled {
			t.Fatalf("the next pod: %+v", out)
		}
	}
}

// TestFrameworkFailedGangLeavesNoTrace: after a group attempt that fails
// (the 2nd member finds the port taken by the 1st), the snapshot holds
// none of its members and a lone pod asking for the same port is bound
// to the node the 1st member was tried on.
func TestFrameworkFailedGangLeavesNoTrace(t *testing.T) {
	f := newFWFixture(t, nil, nil)
	f.h.AddNode(zonedNode("n1", "a"))
	f.addFWGang("pair", 2, 2, hostPortMember)
	if out := f.once(); out.Result != Unschedulable || !slices.Contains(out.Plugins, "NodePorts") {
		t.Fatalf("group: %+v", out)
	}
	if got := f.snapshotPods(); len(got) != 0 {
		t.Fatalf("the snapshot keeps the failed attempt's members: %v", got)
	}
	f.h.AddPod(withHostPort(pod("lone", 100), 8080))
	if out := f.once(); out.Result != Scheduled || out.Node != "n1" {
		t.Fatalf("lone pod: %+v", out)
	}
}

// TestFrameworkGangReservesAndUnreserves: each member placed is reserved
// before the next is tried; a failed attempt unreserves them all, the
// last first; a successful one runs PreBind for each member and binds it.
func TestFrameworkGangReservesAndUnreserves(t *testing.T) {
	f, probe, b := newProbeFixture(t)
	f.addFWGang("fail", 3, 3, func(i int, p *v1.Pod) {
		if i == 2 {
			p.Labels = map[string]string{"fail": "reserve"}
		}
	})
	if out := f.once(); out.Result != Unschedulable || !slices.Contains(out.Plugins, "BindProbe") {
		t.Fatalf("%+v", out)
	}
	want := []string{"reserve fail-0 n1", "reserve fail-1 n1", "reserve fail-2 n1", "unreserve fail-2", "unreserve fail-1", "unreserve fail-0"}
	if got := probe.seen(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	f.s.reporter = &lockedReporter{} // the members' PreBinds run on goroutines of their own
	f.addFWGang("ok", 2, 2, nil)
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("%+v", out)
	}
	bound := []string{<-b.bound, <-b.bound}
	slices.Sort(bound)
	if !slices.Equal(bound, []string{"ok-0 n1", "ok-1 n1"}) {
		t.Fatalf("bound %v", bound)
	}
	got := probe.seen()[len(want):]
	slices.Sort(got)
	if want := []string{"prebind ok-0", "prebind ok-1", "reserve ok-0 n1", "reserve ok-1 n1"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if n := f.c.GroupPlaced("default/ok"); n != 2 {
		t.Fatalf("%d members cached", n)
	}
}

// TestFrameworkGroupCyclesWithConcurrentWriters runs group attempts and
// lone pods' cycles on the framework path while two goroutines, as
// informers do, add and delete nodes and bound pods: under -race, a
// plugin or the snapshot's trial reading what a writer changes would be
// reported. The writers' nodes are tainted, so every group fits the four
// others and is bound whole, each member on a node of its own (the
// members of a group ask for one host port); and the snapshot, brought up
// to date at the end, holds what the cache holds.
func TestFrameworkGroupCyclesWithConcurrentWriters(t *testing.T) {
	f := newFWFixture(t, nil, nil)
	for i := range 4 {
		f.h.AddNode(zonedNode(fmt.Sprint("n", i), "a"))
	}
	const groups, lone = 8, 16
	for g := range groups {
		f.addFWGang(fmt.Sprint("g", g), 3, 3, func(_ int, p *v1.Pod) { withHostPort(p, int32(9000+g)) })
	}
	for i := range lone {
		f.h.AddPod(pod(fmt.Sprint("p", i), 10))
	}
	stop := make(chan struct{})
	var writers sync.WaitGroup
	writers.Go(func() { // nodes
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n := zonedNode(fmt.Sprint("x", i%3), "b")
			n.Spec.Taints = []v1.Taint{{Key: "writer", Effect: v1.TaintEffectNoSchedule}}
			f.h.AddNode(n)
			f.h.DeleteNode(n)
		}
	})
	writers.Go(func() { // bound pods
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			other := pod(fmt.Sprint("other", i%5), 10)
			other.Spec.SchedulerName, other.Spec.NodeName = "default-scheduler", fmt.Sprint("n", i%4)
			f.h.AddPod(other)
			f.h.DeletePod(other)
		}
	})
	f.s.reporter = &lockedReporter{}
	for range groups + lone {
		info, ok := tryPop(f.q)
		if !ok {
			break
		}
		if out := f.s.ScheduleOne(context.Background(), info); out.Result != Scheduled {
			t.Errorf("%s%s: %+v", info.Group, info.Key, out)
		}
	}
	close(stop)
	writers.Wait()
	for g := range groups {
		nodes := map[string]bool{}
		for i := range 3 {
			if n, ok := f.b.binds[fmt.Sprintf("g%d-%d", g, i)]; ok {
				nodes[n] = true
			}
		}
		if len(nodes) != 3 {
			t.Errorf("group g%d bound on %v, want 3 nodes", g, nodes)
		}
	}
	if len(f.b.binds) != groups*3+lone {
		t.Errorf("%d bound, want %d", len(f.b.binds), groups*3+lone)
	}
	snap := f.s.o.Profiles[0].Snapshot()
	if _, err := f.c.UpdateSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if want, got := contentOfCache(f.c), contentOfSnapshot(t, snap); fmt.Sprint(want) != fmt.Sprint(got) {
		t.Fatalf("after the cycles:\n cache    %v\n snapshot %v", want, got)
	}
}
