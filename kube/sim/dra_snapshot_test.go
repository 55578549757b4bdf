package sim

import (
	"os"
	"path/filepath"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// draSnapshotBase is a snapshot's node n1 with a ResourceSlice of two
// GPUs, their DeviceClass, and the template one-gpu in namespace ml.
const draSnapshotBase = `apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec: {selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-slice}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}
`

// draSnapshotPod is a pending pod of namespace ml whose one claim, gpu,
// is claims (a PodResourceClaim in flow style).
func draSnapshotPod(name, claim string) string {
	return `---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: ml, uid: uid-` + name + `}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}, claims: [{name: gpu}]}}]
  resourceClaims: [` + claim + `]
`
}

// runDRASnapshot runs a snapshot of yaml with the invariants checked.
func runDRASnapshot(t *testing.T, yaml string) *sim {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return runSim(t, snapshotScenario(path))
}

// TestSnapshotClaimNamesNotReused: a claim the simulator makes from a
// template never takes the name of a claim that exists. The snapshot's
// claim a-gpu-1 holds gpu-0 (its pod gone, not yet deallocated); pod a's
// claim from one-gpu would be named a-gpu-1 too. Written over, the
// snapshot's claim and its allocation were lost and gpu-0 was free for
// a and b both; kept, only gpu-1 is free, so one of them waits.
func TestSnapshotClaimNamesNotReused(t *testing.T) {
	s := runDRASnapshot(t, draSnapshotBase+`---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: a-gpu-1, namespace: ml}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}
status:
  allocation:
    devices: {results: [{request: gpu, driver: gpu.example.com, pool: n1, device: gpu-0}]}
    nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]}
`+draSnapshotPod("a", "{name: gpu, resourceClaimTemplateName: one-gpu}")+draSnapshotPod("b", "{name: gpu, resourceClaimTemplateName: one-gpu}"))
	held := s.storedClaim("ml", "a-gpu-1")
	if held == nil || held.Status.Allocation == nil || held.Status.Allocation.Devices.Results[0].Device != "gpu-0" || len(held.Status.ReservedFor) != 0 {
		t.Errorf("the snapshot's claim a-gpu-1 is now %+v, want it as it was: gpu-0, reserved for no pod", held)
	}
	claims := 0
	for _, o := range s.obj.byKey {
		if _, ok := o.(*resourceapi.ResourceClaim); ok {
			claims++
		}
	}
	if b := boundAt(s); claims != 3 || (b["a"] >= 0) == (b["b"] >= 0) {
		t.Errorf("%d claims, a and b bound at %v; want 3 claims and one of the pods bound on the one free GPU", claims, b)
	}
}

// TestSnapshotFinishedPodsFreeTheirDevices: a snapshot's finished pod
// (Succeeded) whose claim is still reserved for it (the snapshot was
// taken before the resourceclaim controller caught up) frees the claim's
// device, as that controller would: its reservation goes, the claim made
// for it is deleted, and both pending pods get one of the two GPUs.
// Before, the device stayed taken for the whole run and one pod waited.
func TestSnapshotFinishedPodsFreeTheirDevices(t *testing.T) {
	s := runDRASnapshot(t, draSnapshotBase+`---
apiVersion: v1
kind: Pod
metadata: {name: done, namespace: ml, uid: uid-done}
spec:
  nodeName: n1
  containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
status:
  phase: Succeeded
  resourceClaimStatuses: [{name: gpu, resourceClaimName: done-gpu-x1}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: done-gpu-x1
  namespace: ml
  annotations: {resource.kubernetes.io/pod-claim-name: gpu}
  finalizers: [resource.kubernetes.io/delete-protection]
  ownerReferences: [{apiVersion: v1, kind: Pod, name: done, uid: uid-done, controller: true}]
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}
status:
  allocation:
    devices: {results: [{request: gpu, driver: gpu.example.com, pool: n1, device: gpu-0}]}
    nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]}
  reservedFor: [{resource: pods, name: done, uid: uid-done}]
`+draSnapshotPod("a", "{name: gpu, resourceClaimTemplateName: one-gpu}")+draSnapshotPod("b", "{name: gpu, resourceClaimTemplateName: one-gpu}"))
	if b := boundAt(s); b["a"] < 0 || b["b"] < 0 {
		t.Errorf("a and b bound at %v (%v), want both bound", b, lastMessages(s))
	}
	if c := s.storedClaim("ml", "done-gpu-x1"); c != nil {
		t.Errorf("the finished pod's claim is still there: %+v", c.Status)
	}
	if s.x.snapshot.Terminal != 1 {
		t.Errorf("snapshot %+v, want the finished pod counted as terminal", *s.x.snapshot)
	}
}
