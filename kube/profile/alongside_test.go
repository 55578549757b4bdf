package profile

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

// TestAlongsideSharesInformers: a framework built alongside another is
// its own profile, but reads the other's informers (an object added
// through one is seen by the other's plugins at once) and shares its
// claim holds; one on another snapshot, or given informers or objects of
// its own, is refused.
func TestAlongsideSharesInformers(t *testing.T) {
	a := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "a"), node("n2", "a")}})
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := &cfg.Profiles[0]
	prof.SchedulerName = "b"
	b, err := NewFrameworkOn(context.Background(), prof, Setup{Snapshot: a.Snapshot(), Alongside: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if a.Name() != "default-scheduler" || b.Name() != "b" {
		t.Fatalf("names %q and %q", a.Name(), b.Name())
	}
	if a.holds != b.holds {
		t.Fatal("the claim holds are not shared")
	}
	p := pod("with-volume", "", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	})
	if res := schedule(t, b, p); len(res.Feasible) != 0 || res.Status == nil || !strings.Contains(res.Status.Message(), "not found") {
		t.Fatalf("b before the claim exists: feasible %v, status %v; want its claim not found", res.Feasible, res.Status)
	}
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "pvc-data", ResourceVersion: "1"},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	if err := a.AddObject(pvc); err != nil {
		t.Fatal(err)
	}
	if res := schedule(t, b, p); res.Status != nil && strings.Contains(res.Status.Message(), "not found") {
		t.Fatalf("b does not see the claim added through a: %v", res.Status)
	}
	for _, c := range []struct {
		name  string
		setup Setup
		want  string
	}{
		{"another snapshot", Setup{Snapshot: backendcache.NewEmptySnapshot(), Alongside: a}, "share its snapshot"},
		{"objects of its own", Setup{Snapshot: a.Snapshot(), Alongside: a, Objects: []runtime.Object{pvc}}, "takes its informers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fw, err := NewFrameworkOn(context.Background(), prof, c.setup)
			if err == nil {
				fw.Close()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"b"`) {
				t.Fatalf("got %v, want an error naming profile b with %q", err, c.want)
			}
		})
	}
}
