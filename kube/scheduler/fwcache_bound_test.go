package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/framework"
)

// servedPod is pod name as an API server serves it before its binding:
// defaulted, with its service account's volume, the default tolerations
// and a resource version, every list, map and pointer its own (as two
// decodings share none).
func servedPod(name string) *v1.Pod {
	grace, tolerate, mode := int64(30), int64(300), int32(420)
	p := pod(name, 100)
	p.ResourceVersion = "100"
	p.Labels = map[string]string{"group": "pod"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "compare-e2e", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1"}}
	c := &p.Spec.Containers[0]
	c.Image, c.TerminationMessagePath, c.ImagePullPolicy = "registry.k8s.io/pause:3.10", "/dev/termination-log", v1.PullIfNotPresent
	c.Resources.Requests[v1.ResourceMemory] = *resource.NewQuantity(64<<20, resource.BinarySI)
	c.VolumeMounts = []v1.VolumeMount{{Name: "kube-api-access", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
	p.Spec.RestartPolicy, p.Spec.DNSPolicy, p.Spec.TerminationGracePeriodSeconds = v1.RestartPolicyAlways, v1.DNSClusterFirst, &grace
	p.Spec.Tolerations = []v1.Toleration{
		{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &tolerate},
		{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &tolerate},
	}
	p.Spec.Volumes = []v1.Volume{{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: &mode, Sources: []v1.VolumeProjection{{ConfigMap: &v1.ConfigMapProjection{
			LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}}}}}
	p.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBurstable}
	return p
}

// bindingOf is p as an API server's binding to node leaves it: placed,
// a new resource version, PodScheduled true, the nominated node cleared.
func bindingOf(p *v1.Pod, node string) *v1.Pod {
	b := p.DeepCopy()
	b.Spec.NodeName, b.ResourceVersion, b.Status.NominatedNodeName = node, "101", ""
	for i := range b.Status.Conditions {
		if b.Status.Conditions[i].Type == v1.PodScheduled {
			b.Status.Conditions[i] = v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue}
			return b
		}
	}
	b.Status.Conditions = append(b.Status.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
	return b
}

// TestBoundAsAssumed: the assumed object and the bound pod an API
// server's informer delivers (decoded apart) are one pod for upstream's
// cache when they differ only in what the binding writes.
func TestBoundAsAssumed(t *testing.T) {
	with := func(f func(*v1.Pod)) func(*v1.Pod) *v1.Pod {
		return func(p *v1.Pod) *v1.Pod { b := bindingOf(p, "n1"); f(b); return b }
	}
	cases := []struct {
		name    string
		pending func(*v1.Pod) // the pod before its binding
		bound   func(*v1.Pod) *v1.Pod
		want    bool
	}{
		{name: "as the binding leaves it", bound: with(func(*v1.Pod) {}), want: true},
		{name: "unschedulable before", pending: func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
		}, bound: with(func(*v1.Pod) {}), want: true},
		{name: "nominated before", pending: func(p *v1.Pod) { p.Status.NominatedNodeName = "n1" },
			bound: with(func(*v1.Pod) {}), want: true},
		{name: "other managed fields", bound: with(func(b *v1.Pod) {
			b.ManagedFields = append(b.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kube-scheduler", Subresource: "binding"})
		}), want: true},
		{name: "a topology label from the binding", bound: with(func(b *v1.Pod) { b.Labels["topology.kubernetes.io/zone"] = "a" })},
		{name: "another request", bound: with(func(b *v1.Pod) {
			b.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("200m")
		})},
		{name: "another condition", bound: with(func(b *v1.Pod) {
			b.Status.Conditions = append(b.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse})
		})},
		{name: "another nominated node", bound: with(func(b *v1.Pod) { b.Status.NominatedNodeName = "n2" })},
		{name: "another phase", bound: with(func(b *v1.Pod) { b.Status.Phase = v1.PodRunning })},
		{name: "another UID", bound: with(func(b *v1.Pod) { b.UID = "other" })},
		{name: "deleted", bound: with(func(b *v1.Pod) { b.DeletionTimestamp = &metav1.Time{} })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := servedPod("a")
			if c.pending != nil {
				c.pending(p)
			}
			m := newUpstreamMirror()
			if got := m.boundAsAssumed(assumedOn(p, "n1"), c.bound(p)); got != c.want {
				t.Errorf("%v, want %v", got, c.want)
			}
		})
	}
}

// TestBoundAsAssumedKeepsEntry: confirming an assumption with the bound
// pod as an API server serves it leaves upstream's cache as it was (the
// node's generation, the assumed object in the snapshot) and allocates
// nothing to compare the two once the mirror's buffers have grown;
// kube-scheduler's cache would remove the pod and add it again.
func TestBoundAsAssumedKeepsEntry(t *testing.T) {
	c, snap, gen := mirroredNode(t)
	p := servedPod("a")
	placed := assumedOn(p, "n1")
	assume(t, c, p, "n1", &pendingBinding{fw: &fwBinding{pod: placed, node: "n1"}})
	before := gen()
	if err := c.AddPod(bindingOf(p, "n1")); err != nil {
		t.Fatal(err)
	}
	if g := gen(); g != before {
		t.Errorf("confirming the assumption moved the node's generation from %d to %d", before, g)
	}
	ni, _ := snap.NodeInfos().Get("n1")
	if pods := ni.GetPods(); len(pods) != 1 || pods[0].GetPod() != placed {
		t.Errorf("the snapshot does not hold the assumed object: %v", pods)
	}
	if c.IsAssumed(framework.Key(p)) {
		t.Error("still assumed")
	}

	assumed, bound := assumedOn(p, "n1"), bindingOf(p, "n1")
	bound.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}
	assumed.Spec.Containers = []v1.Container{*bound.Spec.Containers[0].DeepCopy()}
	m := c.up
	if !m.boundAsAssumed(assumed, bound) {
		t.Fatal("not recognised")
	}
	if n := testing.AllocsPerRun(20, func() { m.boundAsAssumed(assumed, bound) }); n != 0 {
		t.Errorf("%v allocations per comparison, want 0", n)
	}
}
