package profile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

const zoneKey = "topology.kubernetes.io/zone"

func node(name, zone string, taints ...v1.Taint) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name),
			Labels: map[string]string{zoneKey: zone, "kubernetes.io/hostname": name}},
		Spec: v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110"),
		}},
	}
}

func pod(name, nodeName string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pod-" + name), Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{NodeName: nodeName, SchedulerName: "default-scheduler", Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func hostPort(port int32) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: port}} }
}

// defaultFramework builds the default profile's framework over c.
func defaultFramework(t testing.TB, c Cluster) *Framework {
	t.Helper()
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFramework(context.Background(), &cfg.Profiles[0], c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func schedule(t *testing.T, f *Framework, p *v1.Pod) Result {
	t.Helper()
	res, err := f.Schedule(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestNodePortsRefusesSharedHostPort(t *testing.T) {
	f := defaultFramework(t, Cluster{
		Nodes: []*v1.Node{node("n1", "a"), node("n2", "a")},
		Pods:  []*v1.Pod{pod("first", "n1", hostPort(8080))},
	})
	res := schedule(t, f, pod("second", "", hostPort(8080)))
	if strings.Join(res.Feasible, ",") != "n2" {
		t.Fatalf("feasible %v, want n2 only", res.Feasible)
	}
	if st := res.Rejected["n1"]; st == nil || st.Plugin() != "NodePorts" {
		t.Errorf("n1 rejected by %v, want NodePorts", st)
	}
}

func TestPodTopologySpreadFiltersCrowdedZone(t *testing.T) {
	spread := func(p *v1.Pod) {
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: zoneKey,
			WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	}
	f := defaultFramework(t, Cluster{
		Nodes: []*v1.Node{node("a1", "a"), node("a2", "a"), node("b1", "b")},
		Pods:  []*v1.Pod{pod("w1", "a1", spread), pod("w2", "b1", spread), pod("w3", "a2", spread)},
	})
	res := schedule(t, f, pod("w4", "", spread))
	if strings.Join(res.Feasible, ",") != "b1" {
		t.Fatalf("feasible %v, want b1 only (zone a has 2, zone b 1)", res.Feasible)
	}
	for _, n := range []string{"a1", "a2"} {
		if st := res.Rejected[n]; st == nil || st.Plugin() != "PodTopologySpread" {
			t.Errorf("%s rejected by %v, want PodTopologySpread", n, st)
		}
	}
}

// TestVolumeBindingMissingClaim: a pod whose claim does not exist fits
// nowhere. In the default profile VolumeRestrictions' PreFilter says so
// first; without it, VolumeBinding gives the same reason.
func TestVolumeBindingMissingClaim(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	withoutRestrictions := cfg.Profiles[0].DeepCopy()
	mp := &withoutRestrictions.Plugins.MultiPoint
	mp.Enabled = slices.DeleteFunc(mp.Enabled, func(p config.Plugin) bool { return p.Name == "VolumeRestrictions" })
	p := pod("needs-volume", "", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "missing"}}}}
	})
	for _, tc := range []struct {
		prof   *config.KubeSchedulerProfile
		plugin string
	}{{&cfg.Profiles[0], "VolumeRestrictions"}, {withoutRestrictions, "VolumeBinding"}} {
		f, err := NewFramework(context.Background(), tc.prof, Cluster{Nodes: []*v1.Node{node("n1", "a")}})
		if err != nil {
			t.Fatal(err)
		}
		res := schedule(t, f, p)
		f.Close()
		if len(res.Feasible) != 0 || res.Status == nil {
			t.Fatalf("feasible %v, want none", res.Feasible)
		}
		if res.Status.Code() != fwk.UnschedulableAndUnresolvable || res.Status.Plugin() != tc.plugin ||
			!strings.Contains(res.Status.Message(), `persistentvolumeclaim "missing" not found`) {
			t.Errorf("status %v %q by %q, want %s's claim not found", res.Status.Code(), res.Status.Message(), res.Status.Plugin(), tc.plugin)
		}
	}
}

// TestVolumeBindingBoundClaim: the objects given reach VolumeBinding's
// listers and assume caches: a claim bound to a volume pinned to node n2
// sends the pod there.
func TestVolumeBindingBoundClaim(t *testing.T) {
	pv, pvc := boundClaim()
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "a"), node("n2", "a")}, Objects: []runtime.Object{pv, pvc}})
	res := schedule(t, f, withClaim(pod("with-volume", "")))
	if strings.Join(res.Feasible, ",") != "n2" {
		t.Fatalf("feasible %v (status %v %v), want n2 only", res.Feasible, res.Status, res.Rejected)
	}
}

// withClaim gives p a volume from the claim "data".
func withClaim(p *v1.Pod) *v1.Pod {
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	return p
}

// boundClaim is the claim ns/data bound to a local volume on node n2.
func boundClaim() (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv", ResourceVersion: "1"},
		Spec: v1.PersistentVolumeSpec{
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt"}},
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "data", UID: "pvc-data"},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{"n2"}}},
			}}}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
	}
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "pvc-data", ResourceVersion: "1",
			Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec:   v1.PersistentVolumeClaimSpec{VolumeName: "pv", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
	return pv, pvc
}

func TestTaintTolerationScoresPreferNoSchedule(t *testing.T) {
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{
		node("tainted", "a", v1.Taint{Key: "spot", Value: "true", Effect: v1.TaintEffectPreferNoSchedule}),
		node("clean", "a"),
	}})
	res := schedule(t, f, pod("p", ""))
	if len(res.Feasible) != 2 {
		t.Fatalf("feasible %v, want both (PreferNoSchedule does not filter)", res.Feasible)
	}
	if res.Scores["tainted"] >= res.Scores["clean"] || res.Best != "clean" {
		t.Errorf("scores %v best %s, want the tainted node lower", res.Scores, res.Best)
	}
}

func TestNewFrameworkUnknownPlugin(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	prof := cfg.Profiles[0].DeepCopy()
	prof.Plugins.MultiPoint.Enabled[0].Name = "NoSuchPlugin"
	if _, err := NewFramework(context.Background(), prof, Cluster{}); err == nil || !strings.Contains(err.Error(), "NoSuchPlugin") {
		t.Errorf("err %v, want one naming NoSuchPlugin", err)
	}
}

// BenchmarkSchedule5000Nodes: Filter and Score of one small pod over
// 5,000 empty nodes with the default profile (every node examined). It
// also reports the process's CPU time per pod (cpu-ns/op, GC included),
// which a machine shared with other jobs distorts less than wall time.
func BenchmarkSchedule5000Nodes(b *testing.B) { benchmarkSchedule(b, 5000) }

// BenchmarkSchedule500Nodes: as many nodes as kube-scheduler's adaptive
// percentage examines in a cluster of 5,000.
func BenchmarkSchedule500Nodes(b *testing.B) { benchmarkSchedule(b, 500) }

func benchmarkSchedule(b *testing.B, n int) {
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		nodes[i] = node(fmt.Sprintf("n%04d", i), fmt.Sprintf("z%d", i%3))
	}
	f := defaultFramework(b, Cluster{Nodes: nodes})
	p := pod("bench", "")
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		res, err := f.Schedule(ctx, p)
		if err != nil || len(res.Feasible) != len(nodes) {
			b.Fatalf("%v, %d feasible", err, len(res.Feasible))
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestObjectsChangeBetweenCycles: AddObject, UpdateObject and DeleteObject
// reach the plugins' listers and assume caches at once: a pod whose claim
// is missing is refused, fits only where the claim's local volume is once
// both exist, follows the volume when its node affinity changes, and is
// refused again once the claim is deleted.
func TestObjectsChangeBetweenCycles(t *testing.T) {
	f := defaultFramework(t, Cluster{Nodes: []*v1.Node{node("n1", "a"), node("n2", "a")}})
	p := pod("with-volume", "", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	})
	feasible := func(want string) {
		t.Helper()
		res := schedule(t, f, p)
		if got := strings.Join(res.Feasible, ","); got != want {
			t.Fatalf("feasible %q (status %v), want %q", got, res.Status, want)
		}
	}
	feasible("")
	pv := func(node, version string) *v1.PersistentVolume {
		return &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv", ResourceVersion: version},
			Spec: v1.PersistentVolumeSpec{
				Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt"}},
				ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "data", UID: "pvc-data"},
				NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
					MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
				}}}},
			},
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
		}
	}
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "pvc-data", ResourceVersion: "1",
			Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec:   v1.PersistentVolumeClaimSpec{VolumeName: "pv", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
	if err := f.UpdateObject(pvc); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("UpdateObject of a claim never added: %v, want not found", err)
	}
	for _, obj := range []runtime.Object{pv("n2", "1"), pvc} {
		if err := f.AddObject(obj); err != nil {
			t.Fatal(err)
		}
	}
	feasible("n2")
	if err := f.UpdateObject(pv("n1", "2")); err != nil {
		t.Fatal(err)
	}
	feasible("n1")
	if err := f.DeleteObject(pvc); err != nil {
		t.Fatal(err)
	}
	feasible("")
	if err := f.DeleteObject(pvc); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("second DeleteObject: %v, want not found", err)
	}
	if err := f.AddObject(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}); err == nil || !strings.Contains(err.Error(), "no plugin reads it") {
		t.Fatalf("AddObject of a ConfigMap: %v, want no plugin reads it", err)
	}
}
