package sim

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSnapshotDeletedClaimIsFreed: a claim that a snapshot catches marked
// deleted (deletionTimestamp, DRA's finalizer) and still allocated,
// reserved for no pod, is one the resourceclaim controller had not
// caught up with: it deallocates it and removes the finalizer at once,
// and the claim goes. The simulator does the same at the start, so the
// pending pod waiting for the node's one GPU binds at once; it used to
// keep the claim, and its device, for ever.
func TestSnapshotDeletedClaimIsFreed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reserved string // the old claim's status.reservedFor
		binds    bool
	}{
		{name: "reserved for no pod", reserved: "[]", binds: true},
		{name: "reserved for a running pod", reserved: "[{resource: pods, name: holder, uid: h-1}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: gpu-a}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, capacity: {cpu: "4", memory: 8Gi, pods: "110"}}}
- {apiVersion: v1, kind: Pod, metadata: {name: holder, namespace: ml, uid: h-1}, spec: {nodeName: gpu-a, containers: [{name: c, image: x}]}, status: {phase: Running}}
- {apiVersion: resource.k8s.io/v1, kind: DeviceClass, metadata: {name: gpu.example.com}}
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {name: gpu-a-gpus}
  spec: {nodeName: gpu-a, driver: gpu.example.com, pool: {name: gpu-a, generation: 1, resourceSliceCount: 1}, devices: [{name: gpu-0}]}
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: old, namespace: ml, finalizers: [resource.kubernetes.io/delete-protection], deletionTimestamp: "2026-01-01T00:00:00Z"}
  spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}
  status:
    allocation: {devices: {results: [{request: gpu, driver: gpu.example.com, pool: gpu-a, device: gpu-0}]}}
    reservedFor: ` + tc.reserved + `
- {apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: mine, namespace: ml}, spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: waiting, namespace: ml}
  spec:
    containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
    resourceClaims: [{name: gpu, resourceClaimName: mine}]
  status: {phase: Pending}
`
			path := filepath.Join(t.TempDir(), "cluster.yaml")
			if err := os.WriteFile(path, []byte(snap), 0o644); err != nil {
				t.Fatal(err)
			}
			sc := snapshotScenario(path)
			sc.Duration = time.Minute
			s := runSim(t, sc)
			b := boundAt(s)["waiting"]
			switch {
			case tc.binds && (b < 0 || b > time.Second):
				t.Errorf("waiting bound at %v, want at once (%s)", b, lastMessages(s)["waiting"])
			case !tc.binds && b >= 0:
				t.Errorf("waiting bound at %v on the GPU a running pod's claim holds", b)
			}
			if left := s.storedClaim("ml", "old") != nil; left == tc.binds {
				t.Errorf("claim old left: %v, want %v", left, !tc.binds)
			}
		})
	}
}
