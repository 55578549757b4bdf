package app

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// upstreamOptions are the options of a scheduler named schedq that runs
// lone pods through kube-scheduler's default profile.
func upstreamOptions(t *testing.T) Options {
	t.Helper()
	o := Options{SchedulerName: "schedq"}
	if err := o.loadProfile(); err != nil {
		t.Fatal(err)
	}
	return o
}

// uidPod is a pending pod of ours (testPod gives it a UID).
func uidPod(name string) *v1.Pod { return testPod(name, "schedq", "100m") }

func hostPortPod(name string) *v1.Pod {
	p := uidPod(name)
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}}
	return p
}

// runUpstream runs the scheduler with o on client in the synctest bubble
// until the test ends, and lets it settle.
func runUpstream(t *testing.T, client kubernetes.Interface, o Options) {
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

// TestUpstreamPluginsWakeOnTheirEvents: a pod that only NodePorts rejects
// is woken by
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

// boundVolume is a local PersistentVolume on node and the claim it is
// bound to, as the PV controller leaves them.
func boundVolume(claim, node string) (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + claim},
		Spec: v1.PersistentVolumeSpec{
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/" + claim}},
			ClaimRef:               &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: claim},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
	}
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: claim, Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  pv.Name,
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
	return pv, pvc
}

func claimPod(name, claim string) *v1.Pod {
	p := uidPod(name)
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}}
	return p
}

// TestUpstreamPluginsReadTheClustersVolumes: the volume plugins read the cluster's claims and volumes through the
// scheduler's informers: a pod whose claim does not exist waits with the
// plugin's reason (PodScheduled and a FailedScheduling event), and when the claim and its local volume on n2 are
// created, the claim's event wakes it and it is bound to n2.
func TestUpstreamPluginsReadTheClustersVolumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(testNode("n1", "2"), testNode("n2", "2"), claimPod("vol", "data"))
		runUpstream(t, client, upstreamOptions(t))
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "vol", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("vol is bound to %s before its claim exists", p.Spec.NodeName)
		}
		if c := scheduledCondition(p); c == nil || !strings.Contains(c.Message, `persistentvolumeclaim "data" not found`) {
			t.Fatalf("PodScheduled of vol: %+v, want the claim's absence", c)
		}
		if notes := failedScheduling(t, client, "vol"); len(notes) != 1 || !strings.Contains(notes[0], `persistentvolumeclaim "data" not found`) {
			t.Fatalf("FailedScheduling events %q, want one with the claim's absence", notes)
		}
		pv, pvc := boundVolume("data", "n2")
		if _, err := client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().PersistentVolumeClaims("default").Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := nodeOf(t, client, "vol"); n != "n2" {
			t.Fatalf("vol is on %q a minute after its claim came, want n2, its volume's node", n)
		}
	})
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
