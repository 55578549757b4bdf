package profile

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// modelClass is a DeviceClass named name of the devices of model, with
// no extendedResourceName: a pod asks for its devices by the class's
// implicit extended resource (deviceclass.resource.kubernetes.io/name).
func modelClass(name, model string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.attributes["` + memoDriver + `"].model == "` + model + `"`}}}}}
}

// TestDRAMemoSeesImplicitClassChange: a pod asking for a class's devices
// by its implicit extended resource name is answered by that class's
// selectors; once the class is changed, the memo's answers of earlier
// cycles (kept by what the pod asks) are not the new class's, and the
// memo answers on every node what upstream answers.
func TestDRAMemoSeesImplicitClassChange(t *testing.T) {
	m, f, nodes, mk := accelMemo(t)
	for _, tc := range []struct {
		name  string
		model string // the class's model in this cycle
	}{
		{"the class's first selector", "V100"},
		{"the class changed to another model", "T4"},
		{"and back", "V100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := f.UpdateObject(modelClass("accel", tc.model)); err != nil {
				t.Fatal(err)
			}
			p := mk("p-" + tc.model)
			memoAgreesOnEveryNode(t, m, p, nodes)
		})
	}
}

// accelMemo is the memo's cluster with a device class "accel" of V100s,
// DynamicResources' memo and framework on it, the framework's nodes, and
// mk, which makes a pod asking one device of the class by its implicit
// extended resource name.
func accelMemo(t *testing.T) (*draMemo, *Framework, []fwk.NodeInfo, func(name string) *v1.Pod) {
	t.Helper()
	c := memoCluster()
	c.Objects = append(c.Objects, modelClass("accel", "V100"))
	m, f := memoPlugin(t, c)
	nodes, err := f.Snapshot().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	implicit := v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "accel")
	mk := func(name string) *v1.Pod { return pod(name, "", asks(v1.ResourceList{implicit: milli(1)})) }
	return m, f, nodes, mk
}
