package profile

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestDRAMemoAsksLeavesOutRequestsNoClassServes: upstream's Filter reads
// a pod's requests only for the extended resources a DeviceClass
// serves, so where no class serves one, pods that differ in CPU and
// memory alone ask DRA the same: a later pod's cycle starts with the
// answers kept for the earlier pod's claim (the trace's pods come in
// some 140 signatures of 35 GPU requests). Where a class serves the
// pod's extended resource, two pods whose requests of it differ ask
// differently, and the second must not read the first's answers: the
// first (one device of the class) fits the nodes with a free V100, the
// second (three) none; likewise by the class's extendedResourceName. On every node the memo answers what upstream
// answers.
func TestDRAMemoAsksLeavesOutRequestsNoClassServes(t *testing.T) {
	ctx := context.Background()
	withCPU := func(cpu string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(cpu + "Gi")}
		}
	}
	implicit := v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "accel")
	named := v1.ResourceName("example.com/accel")
	for _, tc := range []struct {
		name          string
		withClass     bool // a class "accel" serves the pods' implicit extended resource
		first, second *v1.Pod
		kept          int // the answers the second cycle starts with
	}{{
		name:   "a claim, CPU and memory differ",
		first:  pod("p1", "", withResourceClaim("want"), withCPU("1")),
		second: pod("p2", "", withResourceClaim("want"), withCPU("3")),
		kept:   4,
	}, {
		name:      "a class's devices asked by their implicit name, one then three",
		withClass: true,
		first:     pod("p1", "", asks(v1.ResourceList{implicit: milli(1)})),
		second:    pod("p2", "", asks(v1.ResourceList{implicit: milli(3)})),
		kept:      0,
	}, {
		name:      "a class's devices asked by its extendedResourceName, one then three",
		withClass: true,
		first:     pod("p1", "", asks(v1.ResourceList{named: milli(1)})),
		second:    pod("p2", "", asks(v1.ResourceList{named: milli(3)})),
		kept:      0,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := memoCluster()
			if tc.withClass {
				class := modelClass("accel", "V100")
				class.Spec.ExtendedResourceName = ptr.To(string(named))
				c.Objects = append(c.Objects, class)
			}
			m, f := memoPlugin(t, c)
			nodes, err := f.Snapshot().NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			first, _ := preFilterBoth(t, m, tc.first)
			for _, ni := range nodes {
				m.Filter(ctx, first, tc.first, ni)
			}
			memo, _ := preFilterBoth(t, m, tc.second)
			if n := len(cycleMemo(memo).asks); n != tc.kept {
				t.Errorf("the second cycle starts with %d answers of the first, want %d", n, tc.kept)
			}
			memoAgreesOnEveryNode(t, m, tc.second, nodes)
		})
	}
}
