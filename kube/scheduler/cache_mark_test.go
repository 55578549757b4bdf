package scheduler

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/framework"
)

// orderedContent is everything a cycle or the wake budget reads of a
// cache, in order: per node, its pods as the cache and kube-scheduler's
// snapshot list them, the requests, the room index; and the pods placed.
func orderedContent(t *testing.T, c *Cache, keys []types.NamespacedName) string {
	t.Helper()
	out := ""
	c.View(func(snap framework.Snapshot) {
		for _, ni := range snap.Nodes() {
			out += fmt.Sprintf("%s %+v:", ni.Name(), ni.Requested)
			for _, pi := range ni.Pods {
				out += " " + pi.Pod.Name
			}
			_, used, pods, _ := c.NodeRoom(ni.Name())
			out += fmt.Sprintf(" room %+v %d\n", used, pods)
		}
	})
	snap := backendcache.NewEmptySnapshot()
	if _, err := c.UpdateSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	nodes, err := snap.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	for _, ni := range nodes {
		out += fmt.Sprintf("up %s %d/%d:", ni.Node().Name, ni.GetRequested().GetMilliCPU(), ni.GetNonZeroRequested().GetMilliCPU())
		for _, pi := range ni.GetPods() {
			out += " " + pi.GetPod().Name
		}
		out += "\n"
	}
	for _, k := range keys {
		node, ok := c.NodeOf(k)
		out += fmt.Sprintf("%s on %q %v placed=%v assumed=%v\n", k.Name, node, ok, c.Placed(k), c.IsAssumed(k))
	}
	c.mu.RLock()
	st := c.stateLocked() // the failure records' fingerprints
	c.mu.RUnlock()
	return out + fmt.Sprintf("group g: %d\nstate %+v\n", c.GroupPlaced("default/g"), st)
}

// TestCacheRollbackLeavesNoTrace writes to a marked cache what a forward
// run does (binds, assumptions, ends, a gang member), rolls it back, and
// finds it as a cache built to the mark only, twice over: the cache's
// view, the room index and kube-scheduler's snapshot, pod order included.
func TestCacheRollbackLeavesNoTrace(t *testing.T) {
	member := podOn("m", 100, "n1")
	g := "g"
	member.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g}
	base := []*v1.Pod{podOn("a", 500, "n1"), podOn("b", 300, "n1"), podOn("c", 200, "n1"), podOn("d", 400, "n2"), member}
	build := func() *Cache {
		c := NewCache()
		c.TrackUpstream()
		c.AddNode(node("n1", 4000))
		c.AddNode(node("n2", 4000))
		c.AddNode(node("n3", 4000))
		for _, p := range base {
			if err := c.AddPod(p); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	keys := []types.NamespacedName{}
	for _, n := range []string{"a", "b", "c", "d", "m", "x", "y", "z"} {
		keys = append(keys, types.NamespacedName{Namespace: "default", Name: n})
	}
	want := orderedContent(t, build(), keys)

	c := build()
	c.Mark()
	for round := range 2 {
		c.RemovePod(keys[0]) // a ends: its node's order changes upstream
		x := podOn("x", 700, "n1")
		x.CreationTimestamp = metav1.Unix(1000, 0) // later than any built pod's
		if err := c.AddPod(x); err != nil {
			t.Fatal(err)
		}
		c.RemovePod(keys[4]) // the gang member ends
		pi, err := framework.NewPodInfo(pod("y", 100))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Assume(pi, "n3", nil); err != nil {
			t.Fatal(err)
		}
		if err := c.AddPod(podOn("z", 100, "n2")); err != nil {
			t.Fatal(err)
		}
		if got := orderedContent(t, c, keys); got == want {
			t.Fatalf("round %d: the writes changed nothing", round)
		}
		if err := c.Rollback(); err != nil {
			t.Fatal(err)
		}
		if got := orderedContent(t, c, keys); got != want {
			t.Fatalf("round %d: after rollback\n%s\nwant, as built\n%s", round, got, want)
		}
	}
}

// TestCacheRollbackRefusesNodeChanges: a mark undoes pod writes only.
func TestCacheRollbackRefusesNodeChanges(t *testing.T) {
	c := NewCache()
	if err := c.Rollback(); err == nil {
		t.Error("rollback without a mark: no error")
	}
	c.AddNode(node("n1", 1000))
	c.Mark()
	c.AddNode(node("n2", 1000))
	if err := c.Rollback(); err == nil {
		t.Error("rollback after a node was added: no error")
	}
	c.Mark()
	if err := c.AddPod(podOn("o", 100, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := c.Rollback(); err == nil {
		t.Error("rollback after a pod on an unknown node: no error")
	}
	c.Mark()
	c.SetNamespace(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}}})
	if err := c.Rollback(); err == nil {
		t.Error("rollback after a namespace changed: no error")
	}
}

// TestCacheRollbackForgetsDeletionsSince: the pods a forward run saw
// deleted or being deleted (a gang's members released, victims, a
// pending pod whose deletion started) are remembered by the cache, which
// then refuses to assume them and does not count them in a group's
// attempt. A rollback forgets those of the run, so that the next run
// from the mark, whose pods may reuse those UIDs (the simulator numbers
// the pods it creates from 1 in every run), assumes and counts them as
// the cache built to the mark would; a pod seen deleted before the mark
// stays refused.
func TestCacheRollbackForgetsDeletionsSince(t *testing.T) {
	g := "g"
	member := pod("m", 100)
	member.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g}
	before, during := pod("before", 100), pod("during", 100)
	c := NewCache()
	c.AddNode(node("n1", 4000))
	c.buryDeleting(before)
	c.Mark()
	gone := func(p *v1.Pod) bool {
		c.mu.RLock()
		defer c.mu.RUnlock()
		return c.gone.has(p.UID)
	}
	for round := range 2 {
		c.buryDeleting(during)
		c.buryMember(member)
		if !gone(during) || !gone(member) {
			t.Fatalf("round %d: the run's deletions are not noted", round)
		}
		if err := c.Rollback(); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			p    *v1.Pod
			want bool
		}{
			{"deleted before the mark", before, true},
			{"being deleted in the run", during, false},
			{"a group member deleted in the run", member, false},
		} {
			if got := gone(tc.p); got != tc.want {
				t.Errorf("round %d, %s: gone %v after the rollback, want %v", round, tc.name, got, tc.want)
			}
		}
		pi, err := framework.NewPodInfo(during)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Assume(pi, "n1", nil); err != nil {
			t.Errorf("round %d: assuming a pod the run saw deleted, after the rollback: %v", round, err)
		}
		if err := c.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
}
