package scheduler

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestGangShortOfMembersWokenByTheMissingMember: a gang parked behind
// GangScheduling with too few members to reach minCount is woken when
// the missing member arrives, pending or already bound (created with
// spec.nodeName, or bound by another scheduler), as kube-scheduler
// v1.37.2's GangScheduling registers both UnscheduledPod and AssignedPod
// additions; then the next attempt counts the bound one as bound before
// and binds the other two. Before, schedq's GangScheduling heard only the
// pending member's arrival, and the gang stayed parked until the
// 5-minute flush.
func TestGangShortOfMembersWokenByTheMissingMember(t *testing.T) {
	for _, c := range []struct {
		name  string
		bound bool
	}{
		{"pending", false},
		{"bound", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, _ := newGangFixture(t)
			f.h.AddNode(node("a", 8000))
			f.h.AddPodGroup(podGroup("big", 3, 0))
			f.addGang("big", 2, 1000)
			out := f.once()
			if out.Result != Unschedulable || !strings.Contains(out.Message, "2 members waiting and 0 bound, fewer than minCount 3") {
				t.Fatalf("outcome %+v", out)
			}
			if loc := f.where("big-0"); loc != schedq.InUnschedulable {
				t.Fatalf("group is %v, want parked", loc)
			}
			third := memberPod("big-2", "big", 1000)
			if c.bound {
				third.Spec.NodeName = "a"
				third.Status.Phase = v1.PodRunning
			}
			f.h.AddPod(third)
			if loc := f.where("big-0"); loc != schedq.InBackoff && loc != schedq.InActive {
				t.Fatalf("the third member did not wake the group: %v", loc)
			}
			f.q.Activate(framework.Key(pod("big-0", 0)))
			if out := f.once(); out.Result != Scheduled {
				t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
			}
			if n := f.c.GroupPlaced("default/big"); n != 3 {
				t.Fatalf("%d members bound or assumed, want 3", n)
			}
		})
	}
}
