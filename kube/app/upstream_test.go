package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/schedq/schedq/kube/plugins"
)

// upstreamOptions are the options of a scheduler named schedq that runs
// lone pods through kube-scheduler's default profile.
func upstreamOptions(t *testing.T) Options {
	t.Helper()
	o := Options{SchedulerName: "schedq", Scoring: plugins.LeastAllocated}
	o.Config.Upstream = true
	if err := o.loadProfile(); err != nil {
		t.Fatal(err)
	}
	return o
}

// uidPod is a pending pod of ours with a UID, as the API server gives
// (kube-scheduler's cache refuses a pod without one).
func uidPod(name string) *v1.Pod {
	p := testPod(name, "schedq", "100m")
	p.UID = types.UID("uid-" + name)
	return p
}

func hostPortPod(name string) *v1.Pod {
	p := uidPod(name)
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}}
	return p
}

// runUpstream runs the scheduler with o on client in the synctest bubble
// until the test ends, and lets it settle.
func runUpstream(t *testing.T, client *fake.Clientset, o Options) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	time.Sleep(time.Second)
	synctest.Wait()
}

func nodeOf(t *testing.T, client *fake.Clientset, name string) string {
	t.Helper()
	p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Spec.NodeName
}

// TestUpstreamPluginsWakeOnTheirEvents: with --upstream-plugins, a pod that
// only NodePorts (a plugin schedq's own profile lacks) rejects is woken by
// the node that makes room for it, long before the queue's 5-minute flush
// of parked pods.
func TestUpstreamPluginsWakeOnTheirEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		holder := hostPortPod("holder")
		holder.Spec.NodeName = "n1"
		client := fakeCluster(testNode("n1", "2"), holder, hostPortPod("second"))
		runUpstream(t, client, upstreamOptions(t))
		if n := nodeOf(t, client, "second"); n != "" {
			t.Fatalf("second is bound to %s, where holder has the host port", n)
		}
		if _, err := client.CoreV1().Nodes().Create(context.Background(), testNode("n2", "2"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := nodeOf(t, client, "second"); n != "n2" {
			t.Fatalf("second is on %q a minute after n2 came, want n2", n)
		}
	})
}
