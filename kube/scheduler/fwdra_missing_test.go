package scheduler

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// wokenBy reports whether one of events (Explain's labels) starts with
// prefix: a registration's label lists each of its action bits.
func wokenBy(events []string, prefix string) bool {
	return slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, prefix) })
}

// TestFrameworkDRAMissingObjectsExplained: what Explain says of a pod
// whose ResourceClaim does not exist (gated by DynamicResources' PreEnqueue,
// never tried, until a claim is added) and of one whose claim names a
// DeviceClass that does not exist (tried, unschedulable by
// DynamicResources with its reason, reported, parked until a class is
// added).
func TestFrameworkDRAMissingObjectsExplained(t *testing.T) {
	claimed := func(name string) *v1.Pod {
		p := pod(name, 100)
		claim := name + "-claim"
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
		return p
	}
	t.Run("claim", func(t *testing.T) {
		f := newFWFixture(t, nil, nil)
		f.h.AddNode(zonedNode("n1", "a"))
		p := claimed("noclaim")
		f.h.AddPod(p)
		x, err := f.q.Explain(framework.Key(p))
		if err != nil || x.Location != schedq.InGated || x.GatedBy != "DynamicResources" ||
			!wokenBy(x.WakingEvents, "DynamicResources:resource.k8s.io/ResourceClaimAll") {
			t.Fatalf("Explain %+v, want gated by DynamicResources until ResourceClaimAdd", x)
		}
		if len(f.r.failures) != 0 {
			t.Fatalf("a gated pod was reported: %q", f.r.failures)
		}
	})
	t.Run("device class", func(t *testing.T) {
		f := newFWFixture(t, nil, nil)
		f.h.AddNode(zonedNode("n1", "a"))
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "noclass-claim", UID: "uid-noclass-claim", ResourceVersion: "1"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
			}}}},
		}
		if err := f.s.o.Profiles[0].AddObject(claim); err != nil {
			t.Fatal(err)
		}
		p := claimed("noclass")
		f.h.AddPod(p)
		out := f.once()
		want := "0/1 nodes are available: request gpu: device class gpu.example.com does not exist."
		if out.Result != Unschedulable || !strings.HasPrefix(out.Message, want) || !slices.Equal(out.Plugins, []string{"DynamicResources"}) {
			t.Fatalf("outcome %+v, want Unschedulable by DynamicResources: %q", out, want)
		}
		x, err := f.q.Explain(framework.Key(p))
		if err != nil || x.Location != schedq.InUnschedulable || !strings.HasPrefix(x.Message, want) ||
			!slices.Equal(x.RejectedBy, []string{"DynamicResources"}) || !wokenBy(x.WakingEvents, "DynamicResources:resource.k8s.io/DeviceClassAdd") {
			t.Fatalf("Explain %+v, want parked by DynamicResources with %q until DeviceClassAdd", x, want)
		}
		if len(f.r.failures) != 1 || !strings.Contains(f.r.failures[0], want) {
			t.Fatalf("reported %q, want %q", f.r.failures, want)
		}
	})
}
