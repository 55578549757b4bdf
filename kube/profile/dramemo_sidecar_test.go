package profile

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestDRAMemoTellsSidecarFromInit: a pod's extended resources are asked
// of DRA per container, and an init container's restart policy decides
// how: a plain init container's devices are reused by the containers
// after it (the pod needs the larger of the two), a sidecar's run beside
// them (the pod needs both). Two pods whose containers ask the same, one
// with a plain init container and one with a sidecar, ask different
// numbers of devices, so the memo's answers kept for the first (fits on
// the nodes of two free GPUs) are not the second's (fits nowhere): on
// every node the memo answers what upstream answers.
func TestDRAMemoTellsSidecarFromInit(t *testing.T) {
	m, _, nodes, _ := accelMemo(t)
	implicit := v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "accel")
	two := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), implicit: milli(2)}
	mk := func(name string, restart *v1.ContainerRestartPolicy) *v1.Pod {
		return pod(name, "", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = two.DeepCopy()
			p.Spec.InitContainers = []v1.Container{{Name: "init", RestartPolicy: restart,
				Resources: v1.ResourceRequirements{Requests: two.DeepCopy()}}}
		})
	}
	for _, tc := range []struct {
		name    string
		restart *v1.ContainerRestartPolicy
	}{
		{"a plain init container: two devices", nil},
		{"the same as a sidecar: four devices", ptr.To(v1.ContainerRestartPolicyAlways)},
		{"a plain init container again", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mk("p-"+tc.name, tc.restart)
			memoAgreesOnEveryNode(t, m, p, nodes)
		})
	}
}
