package scheduler

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// batchFixture is a framework fixture on a clock that moves only when
// the test says so.
func batchFixture(t *testing.T, nodes int) (*fixture, *time.Time) {
	f := newFWFixture(t, nil, nil)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.s.o.Now = func() time.Time { return now }
	for i := range nodes {
		f.h.AddNode(zonedNode(fmt.Sprint("n", i), "a"))
	}
	return f, &now
}

// place adds pod and schedules it, failing the test if it is not placed.
func (f *fixture) place(p *v1.Pod) string {
	f.t.Helper()
	f.h.AddPod(p)
	out := f.once()
	if out.Result != Scheduled {
		f.t.Fatalf("%s: %+v", p.Name, out)
	}
	return out.Node
}

func TestFrameworkBatchSpreadsAsAFullSearch(t *testing.T) {
	// 40 identical pods on 10 nodes of 8 CPUs: every cycle after the
	// first takes the batch's hint, and the pods still spread 4 per node
	// as scoring every node each time does.
	for _, batched := range []bool{true, false} {
		t.Run(fmt.Sprint("batched=", batched), func(t *testing.T) {
			f, now := batchFixture(t, 10)
			perNode := map[string]int{}
			for i := range 40 {
				if !batched {
					*now = now.Add(time.Second) // every batch too old
				}
				perNode[f.place(pod(fmt.Sprint("p", i), 1000))]++
			}
			for n, k := range perNode {
				if k != 4 {
					t.Fatalf("%s has %d pods, want 4 on each node: %v", n, k, perNode)
				}
			}
			if want := map[bool]uint64{true: 39, false: 0}[batched]; f.s.batch.hints != want {
				t.Fatalf("%d hints taken, want %d", f.s.batch.hints, want)
			}
		})
	}
}

func TestFrameworkBatchEnds(t *testing.T) {
	cases := []struct {
		name string
		// between runs after the first two pods of one signature
		// were placed, before a third of that signature
		between func(f *fixture, now *time.Time)
	}{
		{"another signature in between", func(f *fixture, _ *time.Time) { f.place(pod("other", 2000)) }},
		{"too old", func(_ *fixture, now *time.Time) { *now = now.Add(batchMaxAge) }},
		{"a group attempt in between", func(f *fixture, _ *time.Time) {
			f.addFWGang("g", 2, 2, nil)
			if out := f.once(); out.Result != Scheduled {
				f.t.Fatalf("group: %+v", out)
			}
		}},
		{"a failed cycle in between", func(f *fixture, _ *time.Time) {
			f.h.AddPod(pod("huge", 100000))
			if out := f.once(); out.Result != Unschedulable {
				f.t.Fatalf("huge: %+v", out)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, now := batchFixture(t, 4)
			f.place(pod("a0", 1000))
			f.place(pod("a1", 1000))
			if f.s.batch.hints != 1 {
				t.Fatalf("%d hints after two alike pods, want 1", f.s.batch.hints)
			}
			tc.between(f, now)
			before := f.s.batch.hints // a group's members may take hints among themselves
			f.place(pod("a2", 1000))
			if f.s.batch.hints != before {
				t.Fatalf("%d hints, want no new one (%d before a2)", f.s.batch.hints, before)
			}
		})
	}
}

func TestFrameworkBatchHintThatNoLongerFits(t *testing.T) {
	// The batch's other nodes fill up between two cycles (pods bound by
	// another scheduler): their cached scores are stale, the hint fails
	// its filter and the cycle searches again, finding the one node left.
	f, _ := batchFixture(t, 3)
	first := f.place(pod("a0", 1000))
	for i := range 3 {
		n := fmt.Sprint("n", i)
		if n == first {
			continue
		}
		big := pod("filler-"+n, 8000)
		big.Spec.NodeName = n
		f.h.AddPod(big)
	}
	if got := f.place(pod("a1", 1000)); got != first {
		t.Fatalf("a1 on %s, want %s, the only node with room", got, first)
	}
	if f.s.batch.hints != 0 {
		t.Fatalf("%d hints taken, want none", f.s.batch.hints)
	}
}

func TestFrameworkBatchNeedsASignature(t *testing.T) {
	// kube-scheduler's InterPodAffinity does not sign a pod with pod
	// affinity terms: such pods never take a hint.
	f, _ := batchFixture(t, 4)
	unsigned := func(name string) *v1.Pod {
		p := pod(name, 1000)
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 1,
				PodAffinityTerm: v1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}}}
		return p
	}
	if f.s.o.Profiles[0].Framework().SignPod(t.Context(), unsigned("x")) != nil {
		t.Fatal("a pod with pod anti-affinity was signed")
	}
	f.place(unsigned("u0"))
	f.place(unsigned("u1"))
	if f.s.batch.hints != 0 || len(f.s.batch.rest.idx) != 0 {
		t.Fatalf("%d hints for unsigned pods, want none and no batch kept", f.s.batch.hints)
	}
}

func TestFrameworkBatchCandidateNodeGone(t *testing.T) {
	// A candidate the batch would not hint next is deleted between two
	// cycles: the batch ends (as a full re-score of the candidates, which
	// looks each one up, ends it), though its best node is still there.
	// Deleted and added again, the node is the snapshot's new NodeInfo
	// and the batch goes on.
	for _, readd := range []bool{false, true} {
		t.Run(fmt.Sprint("added again=", readd), func(t *testing.T) {
			f, _ := batchFixture(t, 4)
			f.place(pod("a0", 1000))
			f.place(pod("a1", 1000))
			b := &f.s.batch
			if b.hints != 1 || len(b.rest.idx) != 3 {
				t.Fatalf("%d hints, %d candidates left; want 1 and 3", b.hints, len(b.rest.idx))
			}
			gone := b.tab.Name(b.rest.idx[2]) // not the heap's top
			n := zonedNode(gone, "a")
			f.h.DeleteNode(n)
			if readd {
				f.h.AddNode(zonedNode(gone, "a"))
			}
			f.place(pod("a2", 1000))
			if want := map[bool]uint64{false: 1, true: 2}[readd]; b.hints != want {
				t.Fatalf("%d hints, want %d", b.hints, want)
			}
			if readd {
				ni, err := f.s.o.Profiles[0].Snapshot().NodeInfos().Get(gone)
				if err != nil {
					t.Fatal(err)
				}
				for _, i := range b.rest.idx {
					if b.tab.Name(i) == gone && b.infos[i] != ni {
						t.Fatalf("the batch kept %s's old NodeInfo", gone)
					}
				}
			}
		})
	}
}

func TestFrameworkGangMembersBatch(t *testing.T) {
	// A gang of 8 alike members of 2 CPUs on 4 nodes of 8: each member
	// after the first takes the batch's hint, as kube-scheduler's pod
	// group cycle runs its batching per member, and the members still
	// spread 2 per node as scoring every node for each does. The members
	// placed before count on their nodes (a hint is filtered with them).
	f, _ := batchFixture(t, 4)
	f.addFWGang("g", 8, 8, func(_ int, p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("2")
	})
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("group: %+v", out)
	}
	if f.s.batch.hints != 7 {
		t.Errorf("%d hints taken, want 7 (every member after the first)", f.s.batch.hints)
	}
	perNode := map[string]int{}
	for _, n := range f.b.binds {
		perNode[n]++
	}
	if len(f.b.binds) != 8 {
		t.Fatalf("%d members bound, want 8: %v", len(f.b.binds), f.b.binds)
	}
	for n, k := range perNode {
		if k != 2 {
			t.Fatalf("%s has %d members, want 2 on each node: %v", n, k, perNode)
		}
	}
}
