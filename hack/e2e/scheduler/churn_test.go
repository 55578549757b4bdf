package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// nodeDeleteSlack bounds how long after a node's deletion reached the API
// server the scheduler may still send a binding to it: the time for its
// watch to deliver the deletion (milliseconds) plus a binding already on
// its way. Generous, for slow CI machines.
const nodeDeleteSlack = time.Second

// 12. Churn: while pods stream in, pending pods are deleted and
// relabelled and nodes come and go. Every pod left is bound, none twice;
// no node that still exists is over-committed; and no binding to a node
// reached the API server later than nodeDeleteSlack after the node's
// deletion (the audit log has both).
func TestChurn(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	s := startScheduler(t, "schedq-churn")
	nodes := makeNodes(t, c, "churn", 10, nodeSpec{cpu: "8", memory: "16Gi"})
	rng := rand.New(rand.NewPCG(13, 0))
	ctx := context.Background()

	const total = 600
	deleted := map[string]bool{}
	var mu sync.Mutex // deleted
	var churn sync.WaitGroup
	churn.Add(1)
	var added, removed, relabelled, podDeletes int
	go func() {
		defer churn.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		next := len(nodes)
		// 40 rounds, at most 10 a second: 40 nodes added, 20 removed,
		// up to 120 pending pods deleted and 120 relabelled, while the
		// pods are being created and bound.
		for i := range 40 {
			<-tick.C
			// A node comes; from the third on, an older one goes.
			name := fmt.Sprintf("churn-%d", next)
			next++
			makeNodeNoCleanup(t, c, name)
			nodes = append(nodes, name)
			added++
			if i%2 == 1 {
				// Mostly a recent node: an empty node draws bindings
				// (least-allocated scoring), so its deletion races them.
				victim := nodes[len(nodes)-2-rng.IntN(min(4, len(nodes)-1))]
				if err := c.CoreV1().Nodes().Delete(ctx, victim, metav1.DeleteOptions{}); err == nil {
					removed++
				}
				nodes = removeString(nodes, victim)
			}
			// Pending pods: three deleted, three relabelled.
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
			if err != nil {
				continue
			}
			for k := 0; k < 6 && len(pods.Items) > 0; k++ {
				j := rng.IntN(len(pods.Items))
				p := pods.Items[j]
				pods.Items = append(pods.Items[:j], pods.Items[j+1:]...)
				if k%2 == 0 {
					zero := int64(0)
					if err := c.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err == nil {
						mu.Lock()
						deleted[p.Name] = true
						mu.Unlock()
						podDeletes++
					}
					continue
				}
				patch := fmt.Sprintf(`{"metadata":{"labels":{"churn":"%d"}}}`, i)
				if _, err := c.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
					relabelled++
				}
			}
		}
	}()
	t.Cleanup(func() {
		for i := 0; i < 200; i++ {
			c.CoreV1().Nodes().Delete(ctx, fmt.Sprintf("churn-%d", i), metav1.DeleteOptions{})
		}
	})
	// Half the pods wait for the nodes the churn adds (pool=new, room for
	// 20 each): they stay pending long enough to be deleted and
	// relabelled, and they are bound as the nodes come and go.
	names := makePods(t, c, ns, "wait", total/2, podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi",
		nodeSelector: map[string]string{"pool": "new"}})
	names = append(names, makePods(t, c, ns, "p", total/2, podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi"})...)
	churn.Wait()
	var left []string
	for _, n := range names {
		if !deleted[n] {
			left = append(left, n)
		}
	}
	waitBound(t, c, ns, left, 2*time.Minute)
	checkExistingFit(t, c, ns)

	events := audit(t, cl)
	if d := doubleBinds(events, ns); len(d) > 0 {
		t.Errorf("pods bound more than once: %v", d)
	}
	gone := map[string]time.Time{}
	for _, e := range events {
		if e.ObjectRef.Resource == "nodes" && e.Verb == "delete" && e.ok() {
			gone[e.ObjectRef.Name] = e.RequestReceived
		}
	}
	var late []string
	afterDelete, worst := 0, time.Duration(0)
	for _, e := range bindings(events, ns) {
		at, ok := gone[e.RequestObject.Target.Name]
		if !ok || !e.ok() || e.RequestReceived.Before(at) {
			continue
		}
		afterDelete++
		d := e.RequestReceived.Sub(at)
		worst = max(worst, d)
		if d > nodeDeleteSlack {
			late = append(late, fmt.Sprintf("%s to %s %v after its deletion", e.ObjectRef.Name, e.RequestObject.Target.Name, d))
		}
	}
	sort.Strings(late)
	if len(late) > 0 {
		t.Errorf("bindings to deleted nodes: %v", late)
	}
	figure(t, "%d pods, %d nodes added, %d removed, %d pending pods deleted, %d relabelled: %d left, all bound, none twice; "+
		"%d bindings to a node after its deletion reached the API server (latest %v after)",
		total, added, removed, podDeletes, relabelled, len(left), afterDelete, worst.Round(time.Millisecond))
}

// makeNodeNoCleanup creates a 2-cpu node labelled pool=new (the test
// deletes its nodes).
func makeNodeNoCleanup(t *testing.T, c kubernetes.Interface, name string) {
	spec := nodeSpec{cpu: "2", memory: "16Gi", labels: map[string]string{"pool": "new"}}
	n := newNode(name, spec)
	if _, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Errorf("node %s: %v", name, err)
	}
}

func removeString(s []string, x string) []string {
	for i, v := range s {
		if v == x {
			return append(s[:i:i], s[i+1:]...)
		}
	}
	return s
}

// checkExistingFit is checkFits for the nodes that still exist: pods
// bound to a node before it was deleted stay bound to it.
func checkExistingFit(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := map[string]int64{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			cpu[p.Spec.NodeName] += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
		}
	}
	for node, used := range cpu {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if alloc := n.Status.Allocatable.Cpu().MilliValue(); used > alloc {
			t.Errorf("node %s: %dm cpu requested by its pods, %dm allocatable", node, used, alloc)
		}
	}
}
