package app

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUpstreamPluginsPreempt: the whole scheduler on a fake clientset preempts through kube-scheduler's
// DefaultPreemption: a high-priority pod that fits nowhere has the
// low-priority pod deleted through the API evictor, its
// status.nominatedNodeName set, and is bound to that node once the victim
// is gone.
func TestUpstreamPluginsPreempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lowPrio, highPrio := int32(1), int32(100)
		low := testPod("low", "schedq", "2")
		low.UID, low.Spec.Priority, low.Spec.NodeName = "uid-low", &lowPrio, "n1"
		high := testPod("high", "schedq", "2")
		high.UID, high.Spec.Priority = "uid-high", &highPrio
		client := fakeCluster(testNode("n1", "2"), low, high)
		runUpstream(t, client, upstreamOptions(t))
		time.Sleep(time.Minute)
		synctest.Wait()
		_, err := client.CoreV1().Pods("default").Get(context.Background(), "low", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("the victim: %v, want deleted", err)
		}
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.NominatedNodeName != "n1" || p.Spec.NodeName != "n1" {
			t.Fatalf("high: nominated %q, bound to %q; want n1 and n1", p.Status.NominatedNodeName, p.Spec.NodeName)
		}
	})
}
