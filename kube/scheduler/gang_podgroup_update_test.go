package scheduler

import (
	"context"
	"strings"
	"testing"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestGangWokenByItsPodGroupLoweringMinCount: a gang that failed to reach
// its minCount is woken when its PodGroup's minCount is lowered, as
// kube-scheduler v1.37.2's GangScheduling queues a pod group whose
// minCount decreased: while it is parked (the queue requeues it), and
// also when the update came during the attempt (the attempt's quorum is
// the popped minCount; GangScheduling's hint judges the update at the
// requeue), whether the gang had too few members or too few of them fit.
// The next attempt binds the two that fit. Before, a gang whose members
// did not all fit was parked on the rejecting filters alone, though the
// quorum was what failed it, so a PodGroup update during its attempt woke
// nothing until the 5-minute flush.
func TestGangWokenByItsPodGroupLoweringMinCount(t *testing.T) {
	for _, c := range []struct {
		name    string
		members int
		during  bool // the update comes during the attempt, else while parked
		message string
	}{
		{"too few members, during the attempt", 2, true, "2 members waiting and 0 bound, fewer than minCount 3"},
		{"too few fit, while parked", 3, false, "2 of 3 members fit (0 bound before), minCount 3"},
		{"too few fit, during the attempt", 3, true, "2 of 3 members fit (0 bound before), minCount 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, _ := newGangFixture(t)
			f.h.AddNode(node("a", 2000))
			f.h.AddPodGroup(podGroup("big", 3, 0))
			f.addGang("big", c.members, 1000)
			lower := func() { f.h.UpdatePodGroup(podGroup("big", 3, 0), podGroup("big", 2, 0)) }
			info, err := f.q.Pop(ended)
			if err != nil {
				t.Fatal(err)
			}
			if c.during {
				lower()
			}
			out := f.s.ScheduleOne(context.Background(), info)
			if out.Result != Unschedulable || !strings.Contains(out.Message, c.message) {
				t.Fatalf("outcome %+v", out)
			}
			if !c.during {
				if loc := f.where("big-0"); loc != schedq.InUnschedulable {
					t.Fatalf("group is %v, want parked", loc)
				}
				lower()
			}
			if loc := f.where("big-0"); loc != schedq.InBackoff && loc != schedq.InActive {
				t.Fatalf("lowering minCount did not wake the group (rejected by %v): %v", out.Plugins, loc)
			}
			f.q.Activate(framework.Key(pod("big-0", 0)))
			if out := f.once(); out.Result != Scheduled || len(f.b.binds) != 2 {
				t.Fatalf("outcome %+v, binds %v", out, f.b.binds)
			}
		})
	}
}
