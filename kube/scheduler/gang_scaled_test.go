package scheduler

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestScaledUpGangIsNotReleased: a PodGroup's minCount may be raised to
// scale a workload up; the API says such a change applies to the pods
// scheduled from then on, never to those already scheduled. A gang whose
// bound members had reached its minCount before the raise is short of the
// new minCount only because of the raise: its bound members are not
// released (deleted) while the new members wait for room. A gang that
// never reached its minCount is, as before.
func TestScaledUpGangIsNotReleased(t *testing.T) {
	tests := []struct {
		name     string
		created  int32   // the PodGroup's minCount when the members were bound
		changes  []int32 // its minCount changes, in order
		released bool
	}{
		{"bound whole, then minCount raised", 2, []int32{4}, false},
		{"bound whole, raised, then lowered a little", 2, []int32{4, 3}, false},
		{"never whole: minCount 4 from the start", 4, nil, true},
		{"never whole, then minCount raised", 3, []int32{4}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, w := newGangFixture(t)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			f.s = mustNew(t, f.q, f.c, f.b, warnReporter{f.r, w}, Options{Now: func() time.Time { return now }})
			rel := &recReleaser{}
			if err := f.s.EnableGangRelease(GangReleaseOptions{Releaser: rel, After: 30 * time.Second}); err != nil {
				t.Fatal(err)
			}
			f.h.AddNode(node("n1", 2000))
			f.h.AddNode(node("n2", 2000))
			f.h.AddPodGroup(podGroup("train", tc.created, 0))
			for i := range 2 { // bound on n1, which they fill
				p := owned(memberPod(fmt.Sprintf("train-%d", i), "train", 1000))
				p.UID, p.Spec.NodeName = types.UID(p.Name), "n1"
				f.h.AddPod(p)
			}
			hi := pod("high", 2000)
			hi.Spec.NodeName = "n2"
			f.h.AddPod(hi)
			min := tc.created
			for _, next := range tc.changes {
				f.h.UpdatePodGroup(podGroup("train", min, 0), podGroup("train", next, 0))
				min = next
			}
			for i := 2; i < int(min); i++ { // the new members: no room for them
				f.h.AddPod(owned(memberPod(fmt.Sprintf("train-%d", i), "train", 1000)))
			}
			f.once()
			for i := range 3 {
				now = now.Add(20 * time.Second)
				f.wake(fmt.Sprintf("small-%d", i))
				f.once()
			}
			if got := rel.got(); (len(got) > 0) != tc.released {
				t.Fatalf("releases %v, want released %v", got, tc.released)
			}
		})
	}
}
