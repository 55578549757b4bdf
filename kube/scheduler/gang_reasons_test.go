package scheduler

import (
	"slices"
	"strings"
	"testing"

	"github.com/schedq/schedq/kube/framework"
)

// TestGroupFailureReasons: a failed group attempt records why, as a lone
// pod's does: its Reasons (the members' reasons, then the quorum's) reach
// the queue, so that Explain (schedq explain, /debug/queue) gives them,
// and each member that did not fit is reported (its event and
// PodScheduled condition) with its own failure after the group's head,
// as kube-scheduler reports each with its own FitError. Before, a group's
// failure carried no Reasons, and every member was reported with the
// first failed member's message.
func TestGroupFailureReasons(t *testing.T) {
	const selector = "node(s) didn't match Pod's node affinity/selector"
	for _, tc := range []struct {
		name     string
		minCount int32
		members  int
		// own says, per member, what its own report must contain.
		own  map[string]string
		want []string
	}{
		{
			name: "members that do not fit", minCount: 2, members: 3,
			own:  map[string]string{"mix-0": "1 of 3 members fit", "mix-1": "Insufficient cpu", "mix-2": selector},
			want: []string{"Insufficient cpu", selector, ReasonGroupQuorum},
		},
		{
			name: "too few members", minCount: 4, members: 2,
			own:  map[string]string{"mix-0": "2 members waiting and 0 bound, fewer than minCount 4"},
			want: []string{ReasonGroupTooFew},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newGangFixture(t)
			f.h.AddNode(node("a", 1000))
			f.h.AddPodGroup(podGroup("mix", tc.minCount, 0))
			for i := range tc.members {
				p := memberPod("mix-"+string(rune('0'+i)), "mix", 1000)
				if i == 2 {
					p = memberPod("mix-2", "mix", 1)
					p.Spec.NodeSelector = map[string]string{"zone": "nowhere"}
				}
				f.h.AddPod(p)
			}
			out := f.once()
			if out.Result != Unschedulable {
				t.Fatalf("outcome %+v", out)
			}
			if !slices.Equal(out.Reasons, tc.want) {
				t.Errorf("Outcome.Reasons %q, want %q", out.Reasons, tc.want)
			}
			for i := range tc.members {
				name := "mix-" + string(rune('0'+i))
				x, err := f.q.Explain(framework.Key(pod(name, 0)))
				if err != nil || !slices.Equal(x.Reasons, tc.want) {
					t.Errorf("Explain(%s).Reasons %q (%v), want %q", name, x.Reasons, err, tc.want)
				}
			}
			for name, want := range tc.own {
				var got string
				for _, r := range f.r.failures {
					if strings.HasPrefix(r, name+": Unschedulable: group default/mix") {
						got = r
					}
				}
				if !strings.Contains(got, want) {
					t.Errorf("%s reported %q, want it to say %q (all: %q)", name, got, want, f.r.failures)
				}
			}
			if tc.own["mix-1"] != "" {
				for _, r := range f.r.failures {
					if strings.HasPrefix(r, "mix-1:") && strings.Contains(r, selector) {
						t.Errorf("mix-1 reported with another member's failure: %q", r)
					}
				}
			}
		})
	}
}

// TestGroupLeftoverReasons: the members that did not fit an attempt whose
// quorum was met (a success with leftovers, DoneMembers) go back with
// their group with why they did not fit, as a failed attempt's members
// do: Explain gives their reasons (not the quorum's, which was met),
// beside the message. Before, they had the message and no reasons.
func TestGroupLeftoverReasons(t *testing.T) {
	const selector = "node(s) didn't match Pod's node affinity/selector"
	for _, tc := range []struct {
		name    string
		members int
		want    []string
	}{
		{name: "one leftover", members: 3, want: []string{selector}},
		{name: "two leftovers, distinct reasons", members: 4, want: []string{"Insufficient cpu", selector}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newGangFixture(t)
			f.h.AddNode(node("a", 2000))
			f.h.AddPodGroup(podGroup("mix", 2, 0))
			names := make([]string, tc.members)
			for i := range tc.members {
				names[i] = "mix-" + string(rune('0'+i))
				p := memberPod(names[i], "mix", 1000)
				if i == 2 {
					p = memberPod(names[i], "mix", 1)
					p.Spec.NodeSelector = map[string]string{"zone": "nowhere"}
				}
				f.h.AddPod(p)
			}
			if out := f.once(); out.Result != Scheduled {
				t.Fatalf("outcome %+v, want the group scheduled with leftovers", out)
			}
			for _, name := range names[2:] {
				x, err := f.q.Explain(framework.Key(pod(name, 0)))
				if err != nil {
					t.Fatalf("Explain(%s): %v", name, err)
				}
				if !slices.Equal(x.Reasons, tc.want) || x.Message == "" {
					t.Errorf("Explain(%s): reasons %q, message %q; want reasons %q and a message", name, x.Reasons, x.Message, tc.want)
				}
			}
		})
	}
}
