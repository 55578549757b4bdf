package clusterevent

import (
	"testing"

	"github.com/schedq/schedq"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		name    string
		reg, ev schedq.Event
		want    bool
	}{
		{"same", New(Node, Add), New(Node, Add), true},
		{"other action", New(Node, Add), New(Node, Delete), false},
		{"any update takes one kind", New(Node, Update), New(Node, UpdateNodeTaint), true},
		{"one kind does not take another", New(Node, UpdateNodeLabel), New(Node, UpdateNodeTaint), false},
		{"one kind does not take a general update", New(Node, UpdateNodeTaint), New(Node, Update), false},
		{"Pod takes AssignedPod", New(Pod, Add), New(AssignedPod, Add), true},
		{"Pod takes UnscheduledPod", New(Pod, Update), New(UnscheduledPod, UpdatePodLabel), true},
		{"Pod takes TargetPod", New(Pod, UpdatePodScaleDown), New(TargetPod, UpdatePodScaleDown), true},
		{"TargetPod does not take UnscheduledPod", New(TargetPod, Update), New(UnscheduledPod, UpdatePodLabel), false},
		{"scale up is not scale down", New(TargetPod, UpdatePodScaleDown), New(TargetPod, UpdatePodScaleUp), false},
		{"AssignedPod does not take Pod", New(AssignedPod, Add), New(Pod, Add), false},
		{"any kind", New(schedq.AnyKind, Add), New(Service, Add), true},
		{"any kind, all actions", New(schedq.AnyKind, All), New(Service, Delete), true},
		{"other kind", New(Node, Add), New(Service, Add), false},
	}
	for _, tc := range tests {
		if got := Match(tc.reg, tc.ev); got != tc.want {
			t.Errorf("%s: %s matches %s = %v, want %v", tc.name, tc.reg.Label, tc.ev.Label, got, tc.want)
		}
	}
}

func TestLabels(t *testing.T) {
	tests := map[string]schedq.Event{
		"NodeAdd":                             NodeAdd,
		"AssignedPodDelete":                   AssignedPodDelete,
		"NodeUpdateNodeTaint":                 New(Node, UpdateNodeTaint),
		"NodeUpdate":                          New(Node, Update),
		"NodeAdd|Delete":                      New(Node, Add|Delete),
		"PodAll":                              New(Pod, All),
		"UnscheduledPodAdd":                   New(UnscheduledPod, Add),
		"TargetPodUpdatePodScaleUp":           New(TargetPod, UpdatePodScaleUp),
		"storage.k8s.io/CSINodeAdd":           New(CSINode, Add),
		"resource.k8s.io/ResourceSliceUpdate": New(ResourceSlice, Update),
		"NodeUpdateNodeDeclaredFeature":       New(Node, UpdateNodeDeclaredFeature),
		// Every update bit is "Update", not each bit's name: a DeviceClass
		// has no node allocatable and no pod labels (Explain shows these).
		"resource.k8s.io/DeviceClassAdd|Update":   New(DeviceClass, Add|Update),
		"resource.k8s.io/ResourceClaimAdd|Update": New(ResourceClaim, Add|Update),
		"AssignedPodAdd|Delete|UpdatePodLabel":    New(AssignedPod, Add|Delete|UpdatePodLabel),
		"NodeAdd|UpdateNodeLabel|UpdateNodeTaint": New(Node, Add|UpdateNodeLabel|UpdateNodeTaint),
	}
	for want, ev := range tests {
		if ev.Label != want {
			t.Errorf("label %q, want %q", ev.Label, want)
		}
	}
}
