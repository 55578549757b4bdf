package scheduler

import (
	"testing"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestResyncIsNoPodUpdate: an informer's update of a pending pod whose
// two versions have the same ResourceVersion (a resync, or a relist that
// found the pod unchanged) is dropped, as kube-scheduler v1.37.2 drops
// it: it neither moves the pod nor costs the queue an update (the queue
// keeps the object it had). None of the default plugins wakes a parked
// pod on such an update, but the queue took the new object and asked the
// hints. A pod without a ResourceVersion is updated as before, as is a
// real change, and so is an update the simulator makes itself
// (UpdatePod), whose pods keep a snapshot's ResourceVersion.
func TestResyncIsNoPodUpdate(t *testing.T) {
	tests := []struct {
		name    string
		rv, rv2 string
		direct  bool // UpdatePod, as the simulator calls it, not the informer's handler
		newUID  bool // the new version is another pod of the same name (deleted and created again)
		park    bool // parked behind SchedulingGates' gate rather than in activeQ
		updated bool // the queue holds the new object
		where   schedq.Location
	}{
		{name: "resync of a pod in activeQ", rv: "7", rv2: "7", where: schedq.InActive},
		{name: "resync of a parked pod", rv: "7", rv2: "7", park: true, where: schedq.InUnschedulable},
		{name: "a change of a pod in activeQ", rv: "7", rv2: "8", updated: true, where: schedq.InActive},
		{name: "a change of a parked pod", rv: "7", rv2: "8", park: true, updated: true, where: schedq.InUnschedulable},
		{name: "no versions", park: true, updated: true, where: schedq.InUnschedulable},
		{name: "the simulator's own update", rv: "7", rv2: "7", direct: true, park: true, updated: true, where: schedq.InUnschedulable},
		// A relist after a delete and a create under the same name: the
		// new pod, whatever its ResourceVersion, replaces the old one
		// (queued afresh in activeQ), as UpdatePod handles a new UID.
		{name: "a pod created again with the same version, parked", rv: "7", rv2: "7", newUID: true, park: true, updated: true, where: schedq.InActive},
		{name: "a pod created again with the same version, in activeQ", rv: "7", rv2: "7", newUID: true, updated: true, where: schedq.InActive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFWFixture(t, nil, nil)
			f.h.AddNode(node("n", 2000))
			p := pod("p", 4000)
			p.ResourceVersion = tc.rv
			f.h.AddPod(p)
			if tc.park {
				a, ok := tryPop(f.q)
				if !ok {
					t.Fatal("nothing to pop")
				}
				if err := f.q.Requeue(a, schedq.Failure{RejectedBy: []string{"NodeResourcesFit"}, Message: "too big"}); err != nil {
					t.Fatal(err)
				}
			}
			u := p.DeepCopy()
			u.ResourceVersion = tc.rv2
			if tc.newUID {
				u.UID = p.UID + "-again"
			}
			if tc.direct {
				f.h.UpdatePod(p, u)
			} else {
				f.h.updatePodEvent(p, u)
			}
			info, loc, ok := f.q.Get(framework.Key(p))
			if !ok || loc != tc.where {
				t.Fatalf("pod %v (queued %v) after the update, want %v", loc, ok, tc.where)
			}
			if updated := info.Item == u; updated != tc.updated {
				t.Errorf("the queue holds the update's object: %v, want %v", updated, tc.updated)
			}
		})
	}
}
