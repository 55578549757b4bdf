package scheduler

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
)

// rejectedBy is p with its failure record rewritten to name plugin: the
// fingerprints stay those of the cluster p was tried in.
func rejectedBy(t *testing.T, p *v1.Pod, plugin string) *v1.Pod {
	t.Helper()
	var rec FailureRecord
	if err := json.Unmarshal([]byte(p.Annotations[FailureAnnotation]), &rec); err != nil {
		t.Fatal(err)
	}
	rec.Plugins = []string{plugin}
	raw, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	p = p.DeepCopy()
	p.Annotations = map[string]string{FailureAnnotation: string(raw)}
	return p
}

// The warm start replays the volume, claim and service kinds as events
// without objects. A pod parked behind a plugin that registered any action
// of a replayed kind is woken, whichever action (a CSI driver is only
// heard updated, a volume attachment only deleted), and a kind whose
// initial list was empty is replayed as a deletion to the plugins that
// hear deletions of it: the objects the record saw may all be gone.
func TestWarmStartReplaysOtherKinds(t *testing.T) {
	c := fullCluster(t, 0)
	others := []string{clusterevent.PersistentVolume, clusterevent.PersistentVolumeClaim, clusterevent.StorageClass,
		clusterevent.CSINode, clusterevent.CSIDriver, clusterevent.VolumeAttachment, clusterevent.Service,
		clusterevent.ResourceClaim, clusterevent.ResourceSlice, clusterevent.DeviceClass}
	tests := []struct {
		name   string
		plugin string
		listed []string // the kinds whose initial lists held an object
		woken  bool
	}{
		{"VolumeBinding, claims listed", "VolumeBinding", []string{clusterevent.PersistentVolumeClaim}, true},
		{"VolumeBinding, CSI drivers listed", "VolumeBinding", []string{clusterevent.CSIDriver}, true},
		{"NodeVolumeLimits, volume attachments listed", "NodeVolumeLimits", []string{clusterevent.VolumeAttachment}, true},
		{"NodeVolumeLimits, every volume attachment gone", "NodeVolumeLimits", nil, true},
		{"VolumeZone, volumes listed", "VolumeZone", []string{clusterevent.PersistentVolume}, true},
		{"VolumeZone, nothing listed", "VolumeZone", nil, false},
		{"VolumeRestrictions, claims listed", "VolumeRestrictions", []string{clusterevent.PersistentVolumeClaim}, true},
		{"DynamicResources, claims listed", "DynamicResources", []string{clusterevent.ResourceClaim}, true},
		{"DynamicResources, slices listed", "DynamicResources", []string{clusterevent.ResourceSlice}, true},
		{"DynamicResources, every claim gone", "DynamicResources", nil, true},
		{"PodTopologySpread, services listed", "PodTopologySpread", []string{clusterevent.Service}, false},
		{"PodTopologySpread, everything listed", "PodTopologySpread", others, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, h := newLeader(t, false, nil)
			if !h.wakeable(c.pending[0], []string{tc.plugin}) {
				t.Fatalf("%s registers no event", tc.plugin)
			}
			h.warm.others = others
			for _, k := range tc.listed {
				h.warm.listed(k)
			}
			cc := c
			cc.pending = []*v1.Pod{rejectedBy(t, c.pending[0], tc.plugin)}
			cc.list(h, false)
			loc := where(q, "small")
			if got := loc != schedq.InUnschedulable; got != tc.woken {
				t.Fatalf("the pod %s rejected is %v, want woken=%v", tc.plugin, loc, tc.woken)
			}
		})
	}
}
