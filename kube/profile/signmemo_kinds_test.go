package profile

import (
	"bytes"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestSignPodMemoCountsSignedKinds: on the synchronous informers (the
// simulator's), a write of a kind no signer reads (a pod bound, a node
// updated, a claim allocated: a replay's writes) leaves SignPod's memo
// standing, so that the next pod equal to the last but for its name gets
// the very signature again; a write of a kind a signer reads (a Service,
// ReplicationController, ReplicaSet or StatefulSet that selects the pods,
// which spreadSigner reads; a DeviceClass that serves their extended
// resource, which NodeResourcesFit's signer reads) is seen: the next
// signature is computed afresh, here unsignable, as upstream's (the
// controllers' selectors apply to the pods they control), and the
// same once it is deleted. Every signature is upstream's.
func TestSignPodMemoCountsSignedKinds(t *testing.T) {
	sel := map[string]string{"app": "db"}
	selector := &metav1.LabelSelector{MatchLabels: sel}
	n1 := node("n1", "a")
	claim := shareClaim("c", 100, "V100", "", "")
	claim.ResourceVersion = "1"
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{n1}, Objects: []runtime.Object{claim}})
	// mk makes the pods, each controlled by the controller of kind
	// owner ("": none), as spreadSigner finds a controller.
	mk := func(name, owner string) *v1.Pod {
		return pod(name, "", func(p *v1.Pod) {
			p.Labels = sel
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m"), "example.com/gpu": resource.MustParse("1")}
			if owner != "" {
				gv := "apps/v1"
				if owner == "ReplicationController" {
					gv = "v1"
				}
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: gv, Kind: owner, Name: "db", UID: "uid-db", Controller: ptr.To(true)}}
			}
		})
	}
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To("example.com/gpu")}}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: v1.ServiceSpec{Selector: sel}}
	rc := &v1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: v1.ReplicationControllerSpec{Selector: sel}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: appsv1.ReplicaSetSpec{Selector: selector}}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: appsv1.StatefulSetSpec{Selector: selector}}
	bound := pod("bound", "n1")
	allocated := claim.DeepCopy()
	allocated.ResourceVersion = "2"
	allocated.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "bound", UID: "uid-bound"}}
	n1b := n1.DeepCopy()
	n1b.Labels["extra"] = "x"
	var last []byte
	for _, step := range []struct {
		name   string
		write  func() error
		owner  string // the pod's controller's kind
		signed bool
		reused bool // the signature is the last step's, the same bytes
	}{
		{"first", func() error { return nil }, "", true, false},
		{"a pod bound", func() error { return f.AddObject(bound) }, "", true, true},
		{"a node updated", func() error { return f.UpdateObject(n1b) }, "", true, true},
		{"a claim updated", func() error { return f.UpdateObject(allocated) }, "", true, true},
		{"the pod deleted", func() error { return f.DeleteObject(bound) }, "", true, true},
		{"a DeviceClass serves their extended resource", func() error { return f.AddObject(class) }, "", false, false},
		{"the DeviceClass deleted", func() error { return f.DeleteObject(class) }, "", true, false},
		{"a Service selects the pods", func() error { return f.AddObject(svc) }, "", false, false},
		{"the Service deleted", func() error { return f.DeleteObject(svc) }, "", true, false},
		{"controlled by a ReplicationController not there", func() error { return nil }, "ReplicationController", true, false},
		{"the ReplicationController added", func() error { return f.AddObject(rc) }, "ReplicationController", false, false},
		{"the ReplicationController deleted", func() error { return f.DeleteObject(rc) }, "ReplicationController", true, false},
		{"controlled by a ReplicaSet not there", func() error { return nil }, "ReplicaSet", true, false},
		{"the ReplicaSet added", func() error { return f.AddObject(rs) }, "ReplicaSet", false, false},
		{"the ReplicaSet deleted", func() error { return f.DeleteObject(rs) }, "ReplicaSet", true, false},
		{"controlled by a StatefulSet not there", func() error { return nil }, "StatefulSet", true, false},
		{"the StatefulSet added", func() error { return f.AddObject(ss) }, "StatefulSet", false, false},
		{"the StatefulSet deleted", func() error { return f.DeleteObject(ss) }, "StatefulSet", true, false},
	} {
		t.Run(step.name, func(t *testing.T) {
			if err := step.write(); err != nil {
				t.Fatal(err)
			}
			p := mk("p-"+step.name, step.owner)
			got, want := f.SignPod(t.Context(), p), f.Framework().SignPod(t.Context(), p)
			if !bytes.Equal(got, want) || (got != nil) != step.signed {
				t.Fatalf("signature %q, upstream's %q, want signed %v", got, want, step.signed)
			}
			if reused := got != nil && last != nil && &got[0] == &last[0]; reused != step.reused {
				t.Errorf("signature reused %v, want %v", reused, step.reused)
			}
			last = got
		})
	}
}

// TestSignPodMemoKeepsEachKind: pods of a few kinds come in turn, and a
// cycle of a pod with claims signs the pod (upstream's DynamicResources
// refuses) and its copy without claims (SignWithoutClaims). The memo
// keeps each signature by the pod's key, so that in the second round
// every pod, equal to one of the first but for its name, gets that
// one's signatures again, the same bytes, without signing afresh (a
// memo of the last pod alone signed each afresh); every signature is
// upstream's.
func TestSignPodMemoKeepsEachKind(t *testing.T) {
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "a")}})
	mk := func(name, cpu string) *v1.Pod {
		return pod(name, "", withResourceClaim("c"), func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
		})
	}
	type pair struct{ with, without []byte }
	sign := func(p *v1.Pod) pair {
		t.Helper()
		got := pair{f.SignPod(t.Context(), p), f.SignWithoutClaims(t.Context(), p)}
		if want := f.Framework().SignPod(t.Context(), p); !bytes.Equal(got.with, want) || got.with != nil {
			t.Fatalf("%s: signature %q, upstream's %q, want none", p.Name, got.with, want)
		}
		cp := *p
		cp.Spec.ResourceClaims = nil
		if want := f.Framework().SignPod(t.Context(), &cp); !bytes.Equal(got.without, want) || got.without == nil {
			t.Fatalf("%s without claims: signature %q, upstream's %q", p.Name, got.without, want)
		}
		return got
	}
	cpus := []string{"100m", "200m", "300m"}
	first := map[string]pair{}
	for _, cpu := range cpus {
		first[cpu] = sign(mk("a-"+cpu, cpu))
	}
	for _, cpu := range cpus {
		if got := sign(mk("b-"+cpu, cpu)); &got.without[0] != &first[cpu].without[0] {
			t.Errorf("a pod of %s: its copy without claims was signed afresh", cpu)
		}
	}
}

// TestSignPodMemoLeavesOutClaimStatuses: a pod's status names the claims
// made for it from its templates, one of its own per pod, and no signer
// reads those names, so pods of one template that differ in them alone
// have one key, and the second gets the first's signature again (with
// the names in the key, each pod of a claim template was signed afresh);
// upstream signs them alike, with the claims in their spec (not
// signable) and with the names in their status alone (signed).
func TestSignPodMemoLeavesOutClaimStatuses(t *testing.T) {
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "a")}})
	named := func(name string, inSpec bool) *v1.Pod {
		return pod(name, "", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
			if inSpec {
				p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-template")}}
			}
			p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To(name + "-gpu")}}
		})
	}
	for _, tc := range []struct {
		name   string
		inSpec bool
		signed bool
	}{
		{"claims in the spec", true, false},
		{"claim names in the status alone", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := named("a-"+tc.name, tc.inSpec), named("b-"+tc.name, tc.inSpec)
			ka, _ := signKey(nil, a)
			kb, _ := signKey(nil, b)
			if !bytes.Equal(ka, kb) {
				t.Error("pods differing in their claims' names have keys apart")
			}
			for _, p := range []*v1.Pod{a, b} {
				if got, want := f.SignPod(t.Context(), p), f.Framework().SignPod(t.Context(), p); !bytes.Equal(got, want) || (got != nil) != tc.signed {
					t.Fatalf("%s: signature %q, upstream's %q, want signed %v", p.Name, got, want, tc.signed)
				}
			}
			if tc.signed {
				if x, y := f.SignPod(t.Context(), a), f.SignPod(t.Context(), named("c-"+tc.name, tc.inSpec)); &x[0] != &y[0] {
					t.Error("a third pod of the template was signed afresh")
				}
			}
		})
	}
}
