package scheduler

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/framework"
)

// cacheContent is what a cache shows a cycle: each known node's pods
// (bound or assumed), as sorted "namespace/name" keys, its CPU requested
// and allocatable.
type cacheContent map[string]nodeContent

type nodeContent struct {
	pods            []string
	milliCPU, alloc int64
}

func contentOfCache(c *Cache) cacheContent {
	out := cacheContent{}
	c.View(func(snap framework.Snapshot) {
		for _, ni := range snap.Nodes() {
			nc := nodeContent{pods: []string{}, milliCPU: ni.Requested.MilliCPU, alloc: ni.Allocatable.MilliCPU}
			for _, pi := range ni.Pods {
				nc.pods = append(nc.pods, framework.Key(pi.Pod).String())
			}
			slices.Sort(nc.pods)
			out[ni.Name()] = nc
		}
	})
	return out
}

func contentOfSnapshot(t *testing.T, snap *backendcache.Snapshot) cacheContent {
	t.Helper()
	nodes, err := snap.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	out := cacheContent{}
	for _, ni := range nodes {
		nc := nodeContent{pods: []string{}, milliCPU: ni.GetRequested().GetMilliCPU(), alloc: ni.GetAllocatable().GetMilliCPU()}
		for _, pi := range ni.GetPods() {
			nc.pods = append(nc.pods, pi.GetPod().Namespace+"/"+pi.GetPod().Name)
		}
		slices.Sort(nc.pods)
		out[ni.Node().Name] = nc
	}
	return out
}

func podOn(name string, milliCPU int64, node string) *v1.Pod {
	p := pod(name, milliCPU)
	p.Spec.NodeName = node
	return p
}

func assume(t *testing.T, c *Cache, p *v1.Pod, node string, b *pendingBinding) {
	t.Helper()
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Assume(pi, node, b); err != nil {
		t.Fatal(err)
	}
}

// TestUpstreamSnapshotFollowsCache: after each sequence of writes to the
// Cache, upstream's snapshot, brought up to date incrementally from the
// previous case's state, shows exactly what the Cache shows.
func TestUpstreamSnapshotFollowsCache(t *testing.T) {
	a, b := pod("a", 100), pod("b", 200)
	cases := []struct {
		name  string
		write func(t *testing.T, c *Cache)
	}{
		{"nodes added", func(t *testing.T, c *Cache) {
			c.AddNode(node("n1", 4000))
			c.AddNode(node("n2", 4000))
		}},
		{"pods bound", func(t *testing.T, c *Cache) {
			_ = c.AddPod(podOn("x", 300, "n1"))
			_ = c.AddPod(podOn("y", 400, "n2"))
		}},
		{"pod assumed", func(t *testing.T, c *Cache) { assume(t, c, a, "n1", nil) }},
		{"assumption confirmed", func(t *testing.T, c *Cache) { _ = c.AddPod(podOn("a", 100, "n1")) }},
		{"assumed then forgotten", func(t *testing.T, c *Cache) {
			assume(t, c, b, "n2", nil)
			c.Forget(b)
		}},
		{"assumed, seen bound on another node", func(t *testing.T, c *Cache) {
			assume(t, c, b, "n2", nil)
			_ = c.AddPod(podOn("b", 200, "n1"))
		}},
		{"pod updated in place", func(t *testing.T, c *Cache) { _ = c.AddPod(podOn("b", 250, "n1")) }},
		{"node updated", func(t *testing.T, c *Cache) { c.AddNode(node("n2", 8000)) }},
		{"node removed with its pods", func(t *testing.T, c *Cache) { c.RemoveNode("n2") }},
		{"pod of a removed node bound again", func(t *testing.T, c *Cache) { _ = c.AddPod(podOn("y", 500, "n2")) }},
		{"removed node comes back", func(t *testing.T, c *Cache) { c.AddNode(node("n2", 4000)) }},
		{"pod on an unknown node", func(t *testing.T, c *Cache) { _ = c.AddPod(podOn("z", 100, "n3")) }},
		{"unknown node arrives", func(t *testing.T, c *Cache) { c.AddNode(node("n3", 4000)) }},
		{"pods removed", func(t *testing.T, c *Cache) {
			c.RemovePod(framework.Key(a))
			c.RemovePod(framework.Key(pod("z", 0)))
		}},
		{"node deleted under a pending binding", func(t *testing.T, c *Cache) {
			assume(t, c, pod("p", 100), "n3", &pendingBinding{})
			c.RemoveNode("n3")
		}},
		{"trial kept", func(t *testing.T, c *Cache) {
			c.Trial(func(_ framework.Snapshot, tr *Trial) bool {
				for _, name := range []string{"g1", "g2"} {
					pi, _ := framework.NewPodInfo(pod(name, 100))
					tr.Place(pi, "n1", nil)
				}
				return true
			})
		}},
		{"trial undone", func(t *testing.T, c *Cache) {
			c.Trial(func(_ framework.Snapshot, tr *Trial) bool {
				pi, _ := framework.NewPodInfo(pod("g3", 100))
				tr.Place(pi, "n2", nil)
				return false
			})
		}},
		{"trial assumptions forgotten", func(t *testing.T, c *Cache) { c.Forget(pod("g1", 0)) }},
	}
	c := NewCache()
	c.TrackUpstream()
	snap := backendcache.NewEmptySnapshot()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.write(t, c)
			if _, err := c.UpdateSnapshot(snap); err != nil {
				t.Fatal(err)
			}
			want, got := contentOfCache(c), contentOfSnapshot(t, snap)
			if fmt.Sprint(want) != fmt.Sprint(got) {
				t.Fatalf("snapshot differs from the cache:\n cache    %v\n snapshot %v", want, got)
			}
		})
	}
}

// TestTrackUpstreamTakesWhatIsCached: a cache that tracks upstream late
// gives it what it held already.
func TestTrackUpstreamTakesWhatIsCached(t *testing.T) {
	c := NewCache()
	c.AddNode(node("n1", 4000))
	_ = c.AddPod(podOn("x", 300, "n1"))
	assume(t, c, pod("a", 100), "n1", nil)
	snap := backendcache.NewEmptySnapshot()
	if _, err := c.UpdateSnapshot(snap); err == nil {
		t.Fatal("UpdateSnapshot without TrackUpstream: no error")
	}
	c.TrackUpstream()
	if _, err := c.UpdateSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if want, got := contentOfCache(c), contentOfSnapshot(t, snap); fmt.Sprint(want) != fmt.Sprint(got) {
		t.Fatalf("cache %v, snapshot %v", want, got)
	}
}

// TestUpstreamSnapshotConcurrent runs writers (nodes, pods, assumptions,
// forgets) against cycles that update a snapshot and read it with no lock
// held, as a framework cycle does; under -race, a write that reached the
// snapshot's node infos would be reported. At the end the snapshot equals
// the cache.
func TestUpstreamSnapshotConcurrent(t *testing.T) {
	c := NewCache()
	c.TrackUpstream()
	const nodes, writers, writes = 8, 3, 300
	for i := range nodes {
		c.AddNode(node(fmt.Sprintf("n%d", i), 64000))
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range writes {
				n := fmt.Sprintf("n%d", r.IntN(nodes))
				p := pod(fmt.Sprintf("w%d-%d", w, r.IntN(20)), 10)
				switch i % 5 {
				case 0:
					_ = c.AddPod(podOn(p.Name, 10, n))
				case 1:
					pi, _ := framework.NewPodInfo(p)
					_ = c.Assume(pi, n, nil)
				case 2:
					c.Forget(p)
				case 3:
					c.RemovePod(framework.Key(p))
				case 4:
					c.AddNode(node(n, int64(64000+i)))
				}
			}
		})
	}
	snap := backendcache.NewEmptySnapshot()
	done := make(chan struct{})
	var cycles int
	var cycleErr error
	go func() { // one cycle loop, as the scheduler's
		defer close(done)
		for cycleErr == nil && cycles < 200 {
			if _, cycleErr = c.UpdateSnapshot(snap); cycleErr != nil {
				return
			}
			list, _ := snap.NodeInfos().List()
			for _, ni := range list {
				for _, pi := range ni.GetPods() {
					_ = pi.GetPod().Name
				}
				_ = ni.GetRequested().GetMilliCPU()
			}
			cycles++
		}
	}()
	wg.Wait()
	<-done
	if cycleErr != nil {
		t.Fatalf("cycle %d: %v", cycles, cycleErr)
	}
	if _, err := c.UpdateSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if want, got := contentOfCache(c), contentOfSnapshot(t, snap); fmt.Sprint(want) != fmt.Sprint(got) {
		t.Fatalf("after the writes:\n cache    %v\n snapshot %v", want, got)
	}
}

// TestConfirmedAssumptionKeepsNode: an assumed pod confirmed by the same
// pod bound where it was assumed (a shallow copy with spec.nodeName set)
// leaves upstream's snapshot of its node as it was, same generation, and
// the pod can then be removed. A bound pod that differs (a label) is
// added again, and the snapshot shows the new object.
func TestConfirmedAssumptionKeepsNode(t *testing.T) {
	c, snap, gen := mirroredNode(t)
	a := pod("a", 100)
	assume(t, c, a, "n1", nil)
	before := gen()
	bound := *a
	bound.Spec.NodeName = "n1"
	if err := c.AddPod(&bound); err != nil {
		t.Fatal(err)
	}
	if g := gen(); g != before {
		t.Errorf("confirming the assumed pod unchanged moved the node's generation from %d to %d", before, g)
	}
	if c.IsAssumed(framework.Key(a)) {
		t.Error("still assumed after AddPod")
	}
	if got, want := contentOfSnapshot(t, snap), contentOfCache(c); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("snapshot %v, cache %v", got, want)
	}
	c.mu.RLock()
	held := c.podLocked(framework.Key(a))
	c.mu.RUnlock()
	if held != &bound {
		t.Error("the cache does not hold the bound object")
	}
	c.RemovePod(framework.Key(a))
	gen()
	if got := contentOfSnapshot(t, snap)["n1"]; len(got.pods) != 0 || got.milliCPU != 0 {
		t.Errorf("after removal the snapshot shows %+v", got)
	}

	// Bound with a label added: a changed pod, added again.
	b := pod("b", 100)
	assume(t, c, b, "n1", nil)
	before = gen()
	relabelled := *b
	relabelled.Spec.NodeName = "n1"
	relabelled.Labels = map[string]string{"new": "label"}
	if err := c.AddPod(&relabelled); err != nil {
		t.Fatal(err)
	}
	if g := gen(); g == before {
		t.Error("a changed bound pod left the node's generation as it was")
	}
	ni, _ := snap.NodeInfos().Get("n1")
	if pods := ni.GetPods(); len(pods) != 1 || pods[0].GetPod() != &relabelled {
		t.Errorf("the snapshot does not hold the relabelled pod: %v", pods)
	}
}

// TestAssumedObjectShared: a pod assumed by the framework path is given
// to kube-scheduler's cache as its binding's assumed object, and once
// that very object is bound (as the simulator binds), the cache, the
// snapshot and the binding hold one object.
func TestAssumedObjectShared(t *testing.T) {
	c := NewCache()
	c.TrackUpstream()
	c.AddNode(node("n1", 4000))
	snap := backendcache.NewEmptySnapshot()
	a := pod("a", 100)
	placed := assumedOn(a, "n1")
	assume(t, c, a, "n1", &pendingBinding{fw: &fwBinding{pod: placed, node: "n1"}})
	if err := c.AddPod(placed); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	ni, _ := snap.NodeInfos().Get("n1")
	if pods := ni.GetPods(); len(pods) != 1 || pods[0].GetPod() != placed {
		t.Errorf("the snapshot does not hold the assumed object: %v", pods)
	}
	c.mu.RLock()
	held := c.podLocked(framework.Key(a))
	c.mu.RUnlock()
	if held != placed {
		t.Error("the cache does not hold the assumed object")
	}
}

// TestSameButNode: a shallow copy placed on a node is recognised by its
// bytes; an equal deep copy by its values; a changed label, status or
// request is a different pod.
func TestSameButNode(t *testing.T) {
	a := pod("a", 100)
	a.Labels = map[string]string{"app": "web"}
	if !sameBytesButNode(a, assumedOn(a, "n1")) {
		t.Error("a shallow copy placed on a node is not recognised by its bytes")
	}
	deep := a.DeepCopy()
	deep.Spec.NodeName = "n1"
	relabelled := assumedOn(a, "n1")
	relabelled.Labels = map[string]string{"app": "db"}
	running := assumedOn(a, "n1")
	running.Status.Phase = v1.PodRunning
	bigger := pod("a", 200)
	bigger.Labels = a.Labels
	cases := []struct {
		name string
		b    *v1.Pod
		want bool
	}{
		{"shallow copy on a node", assumedOn(a, "n1"), true},
		{"deep copy on a node", deep, true},
		{"relabelled", relabelled, false},
		{"running", running, false},
		{"larger request", bigger, false},
	}
	for _, c := range cases {
		if got := SameButNode(a, c.b); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPodInfoReuse: a cycle's PodInfo is NewPodInfo's for its pod, whether
// it is built or copied from the last cycle's (a pod whose namespace and
// spec are the last pod's, byte for byte).
func TestPodInfoReuse(t *testing.T) {
	var s Scheduler
	anti := func(p *v1.Pod) *v1.Pod {
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: "zone"}}}}
		return p
	}
	renamed := func(p *v1.Pod, name string) *v1.Pod {
		cp := *p
		cp.Name, cp.UID = name, types.UID("uid-"+name)
		return &cp
	}
	a := anti(pod("a", 100))
	other := renamed(a, "other")
	other.Namespace = "other" // its anti-affinity term is of its namespace
	bigger := renamed(a, "bigger")
	bigger.Spec.Containers = pod("x", 200).Spec.Containers
	for _, p := range []*v1.Pod{a, renamed(a, "b"), other, renamed(other, "c"), bigger, a} {
		got, err := s.podInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := framework.NewPodInfo(p)
		if got.Pod != p || !reflect.DeepEqual(got, want) {
			t.Errorf("%s/%s: PodInfo %+v, want %+v", p.Namespace, p.Name, got, want)
		}
	}
}

// mirroredNode is a cache that keeps upstream's cache, with one node n1
// of 4000m, a snapshot, and gen, which updates the snapshot and returns
// n1's generation in it.
func mirroredNode(t *testing.T) (*Cache, *backendcache.Snapshot, func() int64) {
	c := NewCache()
	c.TrackUpstream()
	c.AddNode(node("n1", 4000))
	snap := backendcache.NewEmptySnapshot()
	gen := func() int64 {
		t.Helper()
		if _, err := c.UpdateSnapshot(snap); err != nil {
			t.Fatal(err)
		}
		ni, err := snap.NodeInfos().Get("n1")
		if err != nil {
			t.Fatal(err)
		}
		return ni.GetGeneration()
	}
	return c, snap, gen
}
