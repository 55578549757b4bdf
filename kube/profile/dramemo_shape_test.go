package profile

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestDRAMemoShapeNamesSpecs: shape gives two slices one name exactly
// when their specs are alike but for the node's and the pool's names
// (specBytes): devices in another order, an attribute, a capacity, a
// taint, a pointer set to false where the other has none, the pool's
// generation or count each make another name. It fails if specBytes
// leaves a field out (its JSON and its protobuf tell the same specs
// apart on each case, draSpecProtoOn both ways).
func TestDRAMemoShapeNamesSpecs(t *testing.T) {
	_, base := gpuNode("a", "V100", 3)
	no := false
	t4 := "T4"
	cases := []struct {
		name  string
		edit  func(sp *resourceapi.ResourceSliceSpec)
		alike bool
	}{
		{name: "another node and pool", alike: true, edit: func(sp *resourceapi.ResourceSliceSpec) {
			n := "b"
			sp.NodeName, sp.Pool.Name = &n, "b"
		}},
		{name: "no taints against empty taints", alike: true, edit: func(sp *resourceapi.ResourceSliceSpec) {
			sp.Devices[1].Taints = []resourceapi.DeviceTaint{}
		}},
		{name: "devices in another order", edit: func(sp *resourceapi.ResourceSliceSpec) {
			sp.Devices[0], sp.Devices[2] = sp.Devices[2], sp.Devices[0]
		}},
		{name: "an attribute", edit: func(sp *resourceapi.ResourceSliceSpec) {
			sp.Devices[1].Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: &t4}}
		}},
		{name: "a capacity", edit: func(sp *resourceapi.ResourceSliceSpec) {
			sp.Devices[2].Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"milli": {Value: *resource.NewQuantity(500, resource.DecimalSI)}}
		}},
		{name: "a taint", edit: func(sp *resourceapi.ResourceSliceSpec) {
			sp.Devices[0].Taints = []resourceapi.DeviceTaint{{Key: "k", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		}},
		{name: "a pointer false where none", edit: func(sp *resourceapi.ResourceSliceSpec) {
			sp.AllNodes = &no
		}},
		{name: "shared devices off", edit: func(sp *resourceapi.ResourceSliceSpec) {
			sp.Devices[0].AllowMultipleAllocations = &no
		}},
		{name: "the pool's generation", edit: func(sp *resourceapi.ResourceSliceSpec) { sp.Pool.Generation++ }},
		{name: "the pool's slice count", edit: func(sp *resourceapi.ResourceSliceSpec) { sp.Pool.ResourceSliceCount++ }},
	}
	for _, proto := range []bool{true, false} {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				defer func(v bool) { draSpecProtoOn = v }(draSpecProtoOn)
				draSpecProtoOn = proto
				d := &draMemo{shapes: map[*resourceapi.ResourceSlice]sliceShape{}, ids: map[string]string{}}
				other := base.DeepCopy()
				tc.edit(&other.Spec)
				a, b := d.shape(base).name, d.shape(other).name
				if (a == b) != tc.alike {
					t.Errorf("protobuf %v: names %q and %q, alike %v, want %v", proto, a, b, a == b, tc.alike)
				}
			})
		}
	}
}
