package scheduler

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/scheduler"
)

// A live forecast sees the cluster's volumes: db waits for a claim bound
// to a local volume on the one node, which hog fills for ten minutes by
// its declared runtime, so the forecast starts db there when hog ends.
// The forecast's copy of the state takes the volume and the claim from
// the scheduler's informers; without them db could never start.
func TestForecastOfPodWithVolume(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	ctx := context.Background()
	node := makeNodes(t, c, "fcast", 1, nodeSpec{cpu: "2", memory: "4Gi"})[0]
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "fcast-" + ns},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/data"}},
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data"},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}},
		}}
	pv, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}) })
	empty := ""
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data",
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv.Name, StorageClassName: &empty,
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if pvc, err = c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No volume controller runs here: the claim and the volume are marked
	// bound as it would mark them.
	pvc.Status.Phase = v1.ClaimBound
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv.Spec.ClaimRef.UID = pvc.UID
	if pv, err = c.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = v1.VolumeBound
	if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	s := startScheduler(t, "schedq-fcast")
	spec := podSpec{scheduler: s.name, cpu: "2", memory: "64Mi", nodeSelector: map[string]string{"e2e-test": "fcast"}}
	hog := newPod(ns, "hog", spec)
	hog.Annotations = map[string]string{scheduler.ExpectedRuntimeAnnotation: "10m"}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, hog, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, c, ns, []string{"hog"}, 30*time.Second)
	spec.cpu = "1"
	db := newPod(ns, "db", spec)
	db.Annotations = map[string]string{scheduler.ExpectedRuntimeAnnotation: "1h"}
	db.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, db, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Starts bool
		Wait   time.Duration
		Node   string
	}
	waitFor(t, time.Minute, "a forecast of db", func(context.Context) (bool, error) {
		body := s.get(t, "/debug/forecast/"+ns+"/db")
		return json.Unmarshal([]byte(body), &f) == nil, nil // else not yet forecast
	})
	if !f.Starts || f.Node != node || f.Wait < 8*time.Minute || f.Wait > 11*time.Minute {
		t.Errorf("db's forecast: %+v; want a start on %s when hog ends, about 10m from now", f, node)
	}
}
