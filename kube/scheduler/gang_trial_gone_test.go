package scheduler

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestGangMemberGoneDuringTheTrial: a member deleted (or bound by someone
// else, or being deleted) while its group's trial runs, on no lock, must
// not count towards the group's minCount when the placements become
// assumptions: counted, the attempt bound the others of a gang that could
// not reach its minCount, and the member's binding then failed (404).
func TestGangMemberGoneDuringTheTrial(t *testing.T) {
	tests := []struct {
		name string
		gone func(f *fixture, p *v1.Pod)
		// members in the gang (minCount 3); bound: the members the attempt
		// binds (the others, if a spare one takes the gone one's place).
		members int
		bound   int
		stays   bool // train-1 is still there
	}{
		{"deleted, gang of exactly minCount", func(f *fixture, p *v1.Pod) { f.h.DeletePod(p) }, 3, 0, false},
		{"being deleted, gang of exactly minCount", func(f *fixture, p *v1.Pod) {
			going := p.DeepCopy()
			going.DeletionTimestamp = &metav1.Time{}
			f.h.UpdatePod(p, going)
		}, 3, 0, false},
		{"deleted, a spare member left", func(f *fixture, p *v1.Pod) { f.h.DeletePod(p) }, 4, 3, false},
		{"still there", func(*fixture, *v1.Pod) {}, 3, 3, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, w := newGangFixture(t)
			nb := &namedBinder{done: map[string]func(error){}}
			f.s = mustNew(t, f.q, f.c, nb, warnReporter{f.r, w}, Options{})
			f.h.AddNode(node("a", 8000))
			f.h.AddPodGroup(podGroup("train", 3, 0))
			f.addGang("train", tc.members, 1000)
			a, err := f.q.Pop(ended)
			if err != nil {
				t.Fatal(err)
			}
			tc.gone(f, memberPod("train-1", "train", 1000))
			out := f.s.ScheduleOne(context.Background(), a)
			if len(nb.done) != tc.bound {
				t.Fatalf("%d bindings %v (outcome %+v), want %d", len(nb.done), nb.done, out, tc.bound)
			}
			if _, ok := nb.done["train-1"]; ok && !tc.stays {
				t.Fatal("the gone member is being bound")
			}
			if tc.bound == 0 {
				if n := f.c.GroupPlaced("default/train"); n != 0 {
					t.Fatalf("%d members placed after the failed attempt", n)
				}
				if loc := f.where("train-0"); loc == 0 || loc == schedq.InFlight {
					t.Fatalf("train-0 is %v, want back in the queue", loc)
				}
			}
			if _, _, queued := f.q.Get(framework.Key(pod("train-1", 0))); queued && !tc.stays {
				t.Fatal("the gone member is queued")
			}
		})
	}
}
