package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// draDriver is the driver of the test's devices; no driver runs: the
// scheduler allocates from the slices the test publishes.
const draDriver = "gpu.e2e.schedq.dev"

// publishSlice publishes a ResourceSlice of count devices for node (its
// own pool) and deletes it when the test ends.
func publishSlice(t *testing.T, c kubernetes.Interface, node string, count int) {
	t.Helper()
	sl := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   draDriver,
			NodeName: &node,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range count {
		sl.Spec.Devices = append(sl.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	if _, err := c.ResourceV1().ResourceSlices().Create(context.Background(), sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.ResourceV1().ResourceSlices().Delete(context.Background(), sl.Name, metav1.DeleteOptions{}) })
}

// claimFromTemplate plays the resourceclaim controller (there is no
// kube-controller-manager): it creates the pod's claim from template,
// owned by the pod, and names it in the pod's status.
func claimFromTemplate(t *testing.T, c kubernetes.Interface, p *v1.Pod, podClaim string, tmpl *resourceapi.ResourceClaimTemplate) {
	t.Helper()
	ctx := context.Background()
	yes := true
	rc := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.Namespace, Name: p.Name + "-" + podClaim,
			Annotations:     map[string]string{"resource.kubernetes.io/pod-claim-name": podClaim},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: tmpl.Spec.Spec,
	}
	rc, err := c.ResourceV1().ResourceClaims(p.Namespace).Create(ctx, rc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: podClaim, ResourceClaimName: &rc.Name}}
	if _, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestFrameworkDRAClaims: DynamicResources allocates devices from the
// ResourceSlices the test publishes (two nodes, two devices each) to five
// pods that each claim one from a template: four are bound, each claim's
// status.allocation written by the scheduler names a device of its pod's
// node, no device twice; the fifth waits with DynamicResources' reason in
// PodScheduled. A third node's slice wakes it and it is bound there.
func TestFrameworkDRAClaims(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	ns := namespace(t, c)
	labels := map[string]string{"fw-dra": "yes"}
	nodes := makeNodes(t, c, "fw-dra", 2, nodeSpec{cpu: "8", memory: "16Gi", labels: labels})
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: draDriver},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + draDriver + `"`},
		}}},
	}
	if _, err := c.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.ResourceV1().DeviceClasses().Delete(ctx, class.Name, metav1.DeleteOptions{}) })
	for _, n := range nodes {
		publishSlice(t, c, n, 2)
	}
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one-gpu"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: draDriver}}},
		}}},
	}
	tmpl, err := c.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := startScheduler(t, "schedq-fw-dra")
	var names []string
	for i := range 5 {
		p := newPod(ns, fmt.Sprintf("gpu-%d", i), podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi", nodeSelector: labels})
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl.Name}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
		p, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		claimFromTemplate(t, c, p, "gpu", tmpl)
		names = append(names, p.Name)
	}

	// Four are bound, one waits.
	var waiting string
	waitFor(t, time.Minute, "4 of 5 pods bound, the fifth with DynamicResources' reason", func(context.Context) (bool, error) {
		b := bound(t, c, ns)
		n := 0
		waiting = ""
		for _, name := range names {
			if b[name] != "" {
				n++
			} else {
				waiting = name
			}
		}
		return n == 4 && strings.Contains(podScheduledFalse(t, c, ns, waiting), "cannot allocate all claims"), nil
	})
	figure(t, "%s waits: %s", waiting, podScheduledFalse(t, c, ns, waiting))
	checkAllocations(t, c, ns)

	third := makeNodes(t, c, "fw-dra-more", 1, nodeSpec{cpu: "8", memory: "16Gi", labels: labels})[0]
	start := time.Now()
	publishSlice(t, c, third, 2)
	waitBound(t, c, ns, []string{waiting}, 30*time.Second)
	if got := bound(t, c, ns)[waiting]; got != third {
		t.Fatalf("%s bound to %s, want %s, the only node with a free device", waiting, got, third)
	}
	figure(t, "%s bound %v after the third node's slice was published", waiting, time.Since(start).Round(time.Millisecond))
	checkAllocations(t, c, ns)
}

// checkAllocations: every bound pod's claim is allocated one device of its
// node's pool and reserved for the pod, and no device is allocated twice.
func checkAllocations(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{} // device: pod
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		rc, err := c.ResourceV1().ResourceClaims(ns).Get(ctx, p.Name+"-gpu", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a := rc.Status.Allocation
		switch {
		case a == nil || len(a.Devices.Results) != 1:
			t.Fatalf("%s on %s: claim allocation %+v, want one device", p.Name, p.Spec.NodeName, a)
		case len(rc.Status.ReservedFor) != 1 || rc.Status.ReservedFor[0].UID != p.UID:
			t.Fatalf("%s: claim reserved for %+v", p.Name, rc.Status.ReservedFor)
		}
		r := a.Devices.Results[0]
		if r.Driver != draDriver || r.Pool != p.Spec.NodeName {
			t.Fatalf("%s on %s: allocated %s/%s/%s", p.Name, p.Spec.NodeName, r.Driver, r.Pool, r.Device)
		}
		id := r.Pool + "/" + r.Device
		if owner[id] != "" {
			t.Fatalf("device %s allocated to %s and %s", id, owner[id], p.Name)
		}
		owner[id] = p.Name
	}
}
