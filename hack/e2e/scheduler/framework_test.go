package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// onNodes keeps a pod on the nodes makeNodes made with prefix.
func onNodes(prefix string) map[string]string { return map[string]string{"e2e-test": prefix} }

// TestFrameworkHostPorts: NodePorts keeps two pods asking for hostPort
// 8080 off one node.
func TestFrameworkHostPorts(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	makeNodes(t, c, "fw-ports", 2, nodeSpec{cpu: "4", memory: "16Gi"})
	s := startScheduler(t, "schedq-fw-ports")
	var names []string
	for _, name := range []string{"port-a", "port-b"} {
		p := newPod(ns, name, podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi", nodeSelector: onNodes("fw-ports")})
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}}
		if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	waitBound(t, c, ns, names, time.Minute)
	b := bound(t, c, ns)
	if b["port-a"] == b["port-b"] {
		t.Fatalf("both pods asking for hostPort 8080 are on %s", b["port-a"])
	}
}

// TestFrameworkZoneSpread: 4 replicas with a zone spread of maxSkew 1
// (DoNotSchedule) over zones of 3 and 1 nodes end 2 and 2.
func TestFrameworkZoneSpread(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	const zone = "topology.kubernetes.io/zone"
	makeNodes(t, c, "fw-spread-a", 3, nodeSpec{cpu: "4", memory: "16Gi", labels: map[string]string{zone: "a", "fw-spread": "yes"}})
	makeNodes(t, c, "fw-spread-b", 1, nodeSpec{cpu: "4", memory: "16Gi", labels: map[string]string{zone: "b", "fw-spread": "yes"}})
	s := startScheduler(t, "schedq-fw-spread")
	labels := map[string]string{"app": "spread"}
	names := make([]string, 0, 4)
	for _, name := range []string{"r0", "r1", "r2", "r3"} {
		p := newPod(ns, name, podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi", labels: labels,
			nodeSelector: map[string]string{"fw-spread": "yes"}})
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: zone, WhenUnsatisfiable: v1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
		}}
		if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	waitBound(t, c, ns, names, time.Minute)
	perZone := map[string]int{}
	for _, node := range bound(t, c, ns) {
		switch {
		case strings.HasPrefix(node, "fw-spread-a-"):
			perZone["a"]++
		case strings.HasPrefix(node, "fw-spread-b-"):
			perZone["b"]++
		}
	}
	if perZone["a"] != 2 || perZone["b"] != 2 {
		t.Fatalf("replicas per zone %v, want 2 and 2", perZone)
	}
}

// TestFrameworkPreferredAffinity: soft constraints are scored. Of three
// otherwise equal nodes, a pod that prefers the node labelled disk=ssd
// (NodeAffinity) lands there, and a pod that prefers not to share a node
// with it (InterPodAffinity) does not; a node tainted PreferNoSchedule
// (TaintToleration) gets neither.
func TestFrameworkPreferredAffinity(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	nodes := makeNodes(t, c, "fw-soft", 3, nodeSpec{cpu: "4", memory: "16Gi"})
	ctx := context.Background()
	label := func(node string, mutate func(*v1.Node)) {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mutate(n)
		if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	label(nodes[1], func(n *v1.Node) { n.Labels["disk"] = "ssd" })
	label(nodes[2], func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "spare", Value: "yes", Effect: v1.TaintEffectPreferNoSchedule})
	})
	s := startScheduler(t, "schedq-fw-soft")
	create := func(name string, labels map[string]string, aff *v1.Affinity) {
		p := newPod(ns, name, podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi", labels: labels,
			nodeSelector: onNodes("fw-soft"), affinity: aff})
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitBound(t, c, ns, []string{name}, time.Minute)
	}
	create("ssd", map[string]string{"app": "db"}, &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 100, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}}}})
	create("apart", nil, &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: v1.PodAffinityTerm{
			TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}}})
	b := bound(t, c, ns)
	if b["ssd"] != nodes[1] {
		t.Errorf("ssd on %s, want %s, the node labelled disk=ssd", b["ssd"], nodes[1])
	}
	if b["apart"] != nodes[0] {
		t.Errorf("apart on %s, want %s: not with ssd's pod, not on the PreferNoSchedule node", b["apart"], nodes[0])
	}
}

// localVolume is a local PersistentVolume of class on node.
func localVolume(name, class, node string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName:       class,
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/" + name}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
}

func claim(ns, name, class string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// claimingPod creates a pod of s with a volume from claim.
func claimingPod(t *testing.T, c kubernetes.Interface, ns, name, claim, prefix string, s *sched) {
	t.Helper()
	p := newPod(ns, name, podSpec{scheduler: s.name, cpu: "100m", memory: "64Mi", nodeSelector: onNodes(prefix)})
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}}
	if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitClaimMissing waits for the pod's PodScheduled=False to give the
// volume plugins' reason: its claim does not exist.
func waitClaimMissing(t *testing.T, c kubernetes.Interface, ns, pod, claim string) {
	t.Helper()
	want := `persistentvolumeclaim "` + claim + `" not found`
	waitFor(t, time.Minute, "PodScheduled=False saying "+want, func(context.Context) (bool, error) {
		return strings.Contains(podScheduledFalse(t, c, ns, pod), want), nil
	})
}

// createVolume creates pv and deletes it when the test ends.
func createVolume(t *testing.T, c kubernetes.Interface, pv *v1.PersistentVolume) {
	t.Helper()
	if _, err := c.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{}) })
}

// TestFrameworkClaimCreatedLater: a pod whose claim does not exist waits
// with the plugin's reason; when the claim and the local volume it is
// bound to (on the second node) are created, the claim's event wakes the
// pod, well before the queue's 5-minute flush, and it is bound to the
// volume's node.
func TestFrameworkClaimCreatedLater(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	nodes := makeNodes(t, c, "fw-claim", 2, nodeSpec{cpu: "4", memory: "16Gi"})
	s := startScheduler(t, "schedq-fw-claim")
	claimingPod(t, c, ns, "vol", "data", "fw-claim", s)
	waitClaimMissing(t, c, ns, "vol", "data")

	pv := localVolume(ns+"-data", "", nodes[1])
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data"}
	createVolume(t, c, pv)
	pvc := claim(ns, "data", "")
	// Bound, as the PV controller leaves a claim (there is none here).
	pvc.Spec.VolumeName = pv.Name
	pvc.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	start := time.Now()
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, c, ns, []string{"vol"}, 30*time.Second)
	if got := bound(t, c, ns)["vol"]; got != nodes[1] {
		t.Fatalf("vol bound to %s, want %s, its volume's node", got, nodes[1])
	}
	figure(t, "pod bound %v after its claim was created", time.Since(start).Round(time.Millisecond))
}

// TestFrameworkWaitForFirstConsumer: a pod whose claim (of a
// WaitForFirstConsumer class) does not exist waits; the claim created,
// VolumeBinding picks the local volume on the second node, and its PreBind
// binds the volume to the claim through the API server (the test plays
// the PV controller's part, which completes the claim's side); the pod is
// then bound to that node.
func TestFrameworkWaitForFirstConsumer(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	ns := namespace(t, c)
	nodes := makeNodes(t, c, "fw-wffc", 2, nodeSpec{cpu: "4", memory: "16Gi"})
	class := ns + "-local"
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc}
	if _, err := c.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.StorageV1().StorageClasses().Delete(ctx, class, metav1.DeleteOptions{}) })
	pv := localVolume(ns+"-local", class, nodes[1])
	createVolume(t, c, pv)
	// The PV controller would make the new volume Available; VolumeBinding
	// ignores volumes in any other phase.
	pv, err := c.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = v1.VolumeAvailable
	if pv, err = c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := startScheduler(t, "schedq-fw-wffc")
	claimingPod(t, c, ns, "vol", "data", "fw-wffc", s)
	defer func() {
		if t.Failed() {
			t.Logf("vol:%s", describeUnbound(t, c, ns, []string{"vol"}))
		}
	}()
	waitClaimMissing(t, c, ns, "vol", "data")

	start := time.Now()
	pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim(ns, "data", class), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// VolumeBinding's PreBind sets the volume's claimRef; the PV controller
	// would then bind the claim to it.
	waitFor(t, 30*time.Second, "the volume's claimRef set by PreBind", func(ctx context.Context) (bool, error) {
		got, err := c.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ref := got.Spec.ClaimRef
		return ref != nil && ref.Namespace == ns && ref.Name == "data" && ref.UID == pvc.UID, nil
	})
	if b := bound(t, c, ns)["vol"]; b != "" {
		t.Fatalf("vol bound to %s before its claim is bound", b)
	}
	pvc, err = c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Spec.VolumeName = pv.Name
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, c, ns, []string{"vol"}, 30*time.Second)
	if got := bound(t, c, ns)["vol"]; got != nodes[1] {
		t.Fatalf("vol bound to %s, want %s, its volume's node", got, nodes[1])
	}
	figure(t, "pod bound %v after its claim was created (PreBind's poll included)", time.Since(start).Round(time.Millisecond))
}
