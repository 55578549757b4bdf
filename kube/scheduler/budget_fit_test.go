package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// budgetQueue is a queue with fw's hints and the wake budget on c, as
// the scheduler's queue has them.
func budgetQueue(t *testing.T, fw *profile.Framework, c *Cache) *schedq.Queue[types.NamespacedName, *v1.Pod] {
	t.Helper()
	qc := QueueConfig()
	if err := UseFrameworkHints(context.Background(), &qc, fw, klog.Background()); err != nil {
		t.Fatal(err)
	}
	qc.Budget = WakeBudgetOn(c, fw)
	qc.ClassBudget = true
	q, err := schedq.New(qc)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// parkAfterFit adds p and parks it as NodeResourcesFit rejects it.
func parkAfterFit(t *testing.T, q *schedq.Queue[types.NamespacedName, *v1.Pod], p *v1.Pod) {
	t.Helper()
	if err := q.Add(p); err != nil {
		t.Fatal(err)
	}
	a, err := q.Pop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Requeue(a, schedq.Failure{RejectedBy: []string{"NodeResourcesFit"}}); err != nil {
		t.Fatal(err)
	}
}

// TestWakeBudgetExtendedResourceFromDRA: NodeResourcesFit leaves an
// extended resource that a DeviceClass provides (extendedResourceName) to
// DynamicResources on a node whose allocatable has none of it, and its
// hint wakes a pod asking for one when such a node joins. The wake budget
// must count the node's room the same way: a pod parked on cpu must wake
// for a node with room for its cpu, not stay deferred because the node
// lists no such resource.
func TestWakeBudgetExtendedResourceFromDRA(t *testing.T) {
	const gpu = v1.ResourceName("example.com/gpu")
	tests := []struct {
		name     string
		class    bool  // a DeviceClass provides gpu
		nodeGPUs int64 // gpu in the new node's allocatable
		wake     bool
	}{
		{"from a device class, node without it", true, 0, true},
		{"from a device class, node that has it", true, 1, true},
		{"no device class, node that has it", false, 1, true},
		{"no device class, node without it", false, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fw := defaultFramework(t)
			if tc.class {
				name := string(gpu)
				dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com", ResourceVersion: "1"},
					Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: &name}}
				if err := fw.AddObject(dc); err != nil {
					t.Fatal(err)
				}
			}
			c := NewCache()
			c.AddNode(node("full", 100))
			q := budgetQueue(t, fw, c)
			p := pod("p", 1000)
			p.Spec.Containers[0].Resources.Requests[gpu] = resource.MustParse("1")
			parkAfterFit(t, q, p)

			n := node("new", 4000)
			if tc.nodeGPUs > 0 {
				n.Status.Allocatable[gpu] = *resource.NewQuantity(tc.nodeGPUs, resource.DecimalSI)
			}
			nodeAddWakes(t, q, c, n, p, tc.wake)
		})
	}
}

// frameworkIgnoring is the default profile's framework with
// NodeResourcesFit told to ignore names and groups of extended resources.
func frameworkIgnoring(t *testing.T, names, groups []string) *profile.Framework {
	t.Helper()
	cfg, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := &cfg.Profiles[0]
	found := false
	for _, pc := range prof.PluginConfig {
		if args, ok := pc.Args.(*config.NodeResourcesFitArgs); ok {
			args.IgnoredResources, args.IgnoredResourceGroups = names, groups
			found = true
		}
	}
	if !found {
		t.Fatal("the default profile has no NodeResourcesFitArgs")
	}
	fw, err := profile.NewFrameworkOn(context.Background(), prof, profile.Setup{Snapshot: backendcache.NewEmptySnapshot()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fw.Close() })
	return fw
}

// TestWakeBudgetIgnoredResources: NodeResourcesFit's ignoredResources and
// ignoredResourceGroups (for extended resources an extender manages) are
// not counted by its Filter; a pod that asks for one, parked by a plugin
// whose hint accepts a new node, must wake for a node with room for the
// rest, as kube-scheduler wakes it, not be deferred for lack of a
// resource no node lists.
func TestWakeBudgetIgnoredResources(t *testing.T) {
	tests := []struct {
		name          string
		names, groups []string
		resource      v1.ResourceName
		wake          bool
	}{
		{"ignored by name", []string{"example.com/foo"}, nil, "example.com/foo", true},
		{"ignored by group", nil, []string{"example.com"}, "example.com/foo", true},
		{"another name ignored", []string{"example.com/bar"}, nil, "example.com/foo", false},
		{"nothing ignored", nil, nil, "example.com/foo", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fw := frameworkIgnoring(t, tc.names, tc.groups)
			c := NewCache()
			c.AddNode(node("tainted", 8000, v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule}))
			q := budgetQueue(t, fw, c)
			p := pod("p", 1000)
			p.Spec.Containers[0].Resources.Requests[tc.resource] = resource.MustParse("1")
			if err := q.Add(p); err != nil {
				t.Fatal(err)
			}
			a, err := q.Pop(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Requeue(a, schedq.Failure{RejectedBy: []string{"TaintToleration"}}); err != nil {
				t.Fatal(err)
			}
			n := node("new", 4000)
			nodeAddWakes(t, q, c, n, p, tc.wake)
		})
	}
}

// TestWakeBudgetDeviceClassesConcurrent: the wake budget reads the DRA
// manager's DeviceClass cache under the queue's lock while that cache's
// informer handler writes it; under -race the two must not race, and
// neither may wait for the other (the cache's lock is a leaf). Once the
// class stays, a node's join wakes the pod.
func TestWakeBudgetDeviceClassesConcurrent(t *testing.T) {
	const rounds = 200
	fw := defaultFramework(t)
	c := NewCache()
	c.AddNode(node("full", 100))
	q := budgetQueue(t, fw, c)
	name := "example.com/gpu"
	class := func(rv int) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com", ResourceVersion: fmt.Sprint(rv)},
			Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: &name}}
	}
	var wg sync.WaitGroup
	wg.Go(func() { // the DeviceClass informer
		for i := range rounds {
			if err := fw.AddObject(class(i + 1)); err != nil {
				t.Error(err)
				return
			}
			if err := fw.DeleteObject(class(i + 1)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() { // pods parked, nodes joining
		for i := range rounds {
			p := pod(fmt.Sprint("p", i), 1000)
			p.Spec.Containers[0].Resources.Requests[v1.ResourceName(name)] = resource.MustParse("1")
			parkAfterFit(t, q, p)
			n := node(fmt.Sprint("n", i), 500) // room for none of them
			c.AddNode(n)
			if err := q.Move(clusterevent.NodeAdd, nil, n, nil); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	if err := fw.AddObject(class(rounds + 1)); err != nil {
		t.Fatal(err)
	}
	n := node("roomy", 4000) // room for the first four, in pop order
	c.AddNode(n)
	if err := q.Move(clusterevent.NodeAdd, nil, n, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		_, loc, _ := q.Get(types.NamespacedName{Namespace: "default", Name: fmt.Sprint("p", i)})
		if woke := loc != schedq.InUnschedulable; woke != (i < 4) {
			t.Errorf("p%d woken %v, want %v (room for four, its gpu from a device class)", i, woke, i < 4)
		}
	}
}

// nodeAddWakes adds n to c, tells q, and checks that parked p is woken
// (out of the unschedulable pods) if wake, and left parked otherwise.
func nodeAddWakes(t *testing.T, q *schedq.Queue[types.NamespacedName, *v1.Pod], c *Cache, n *v1.Node, p *v1.Pod, wake bool) {
	t.Helper()
	c.AddNode(n)
	if err := q.Move(clusterevent.NodeAdd, nil, n, nil); err != nil {
		t.Fatal(err)
	}
	x, err := q.Explain(framework.Key(p))
	if err != nil {
		t.Fatal(err)
	}
	if woke := x.Location != schedq.InUnschedulable; woke != wake {
		t.Fatalf("woken %v, want %v: %s", woke, wake, x)
	}
}
