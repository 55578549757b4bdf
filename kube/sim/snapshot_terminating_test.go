package sim

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSnapshotTerminatingPodLeaves: a bound pod that a snapshot catches
// terminating (metadata.deletionTimestamp set: a preemption's victim, a
// rollout's old replica) leaves its node once its grace period is out,
// as the kubelet and the API server make it leave, and the room it held
// goes to the pending pod that waits for it: here the preemptor,
// nominated to that node. The snapshot does not say when it was taken, so
// the pod leaves after its deletionGracePeriodSeconds, the most it can
// have had left. The simulator used to keep it running for ever, so the
// preemptor never bound. A terminating pod's forecast (from the live
// state) already leaves the same way (forecastRun.graceLeft).
func TestSnapshotTerminatingPodLeaves(t *testing.T) {
	for _, tc := range []struct {
		name     string
		grace    string // the victim's deletionGracePeriodSeconds, "" for none
		terminal bool   // the victim is not terminating at all
		want     time.Duration
	}{
		{name: "grace period left", grace: "30", want: 30 * time.Second},
		{name: "no grace period", want: 0},
		{name: "not terminating stays", terminal: true, want: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			del := "deletionTimestamp: \"2026-01-01T00:00:30Z\""
			if tc.grace != "" {
				del += ", deletionGracePeriodSeconds: " + tc.grace
			}
			if tc.terminal {
				del = "uid: keep"
			}
			snap := `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: node-a}, status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}, capacity: {cpu: "2", memory: 8Gi, pods: "110"}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: victim, namespace: default, ` + del + `}
  spec: {nodeName: node-a, containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: preemptor, namespace: default}
  spec: {priority: 100, containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]}
  status: {phase: Pending, nominatedNodeName: node-a}
`
			path := filepath.Join(t.TempDir(), "cluster.yaml")
			if err := os.WriteFile(path, []byte(snap), 0o644); err != nil {
				t.Fatal(err)
			}
			sc := snapshotScenario(path)
			sc.Duration = 2 * time.Minute
			s := runSim(t, sc)
			got := boundAt(s)["preemptor"]
			switch {
			case tc.want < 0 && got >= 0:
				t.Errorf("preemptor bound at %v on the room of a running pod", got)
			case tc.want >= 0 && (got < tc.want || got > tc.want+time.Second):
				t.Errorf("preemptor bound at %v, want within a second after %v (%s)", got, tc.want, lastMessages(s)["preemptor"])
			}
		})
	}
}
