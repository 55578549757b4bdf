package scheduler

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestUpdateFollowsNominatedNodeName: an update of a pending pod of ours
// that adds, changes or removes its status.nominatedNodeName (a previous
// leader's late write, a user's clear) moves its nomination in the queue,
// as kube-scheduler v1.37.2's nominator does, whether the pod is queued or
// in flight; the room the nomination leaves on a node wakes the pods it
// kept out there. When old and new agree, the queue's nomination stands:
// the scheduler's own, whose write is not seen yet, or none where the
// scheduler dropped it without clearing the status. Before 2026-11-29
// only the add path read the field.
func TestUpdateFollowsNominatedNodeName(t *testing.T) {
	tests := []struct {
		name     string
		status   string // big's status.nominatedNodeName when added
		mem      string // then set by the scheduler in the queue ("-": cleared)
		inFlight bool   // big popped before the update
		from, to string // its status.nominatedNodeName in the update
		want     string // its nomination after ("": none)
		woken    bool   // small, kept out of n1 by big's nomination, woken
	}{
		{name: "added by update", from: "", to: "n1", want: "n1"},
		{name: "changed by update", status: "n1", from: "n1", to: "n2", want: "n2", woken: true},
		{name: "removed by update", status: "n1", from: "n1", to: "", want: "", woken: true},
		{name: "empty in both keeps the scheduler's", mem: "n1", want: "n1"},
		{name: "schedq's own write seen as an update", mem: "n1", from: "", to: "n1", want: "n1"},
		{name: "schedq's clear of a nomination it took", status: "n1", mem: "-", from: "n1", to: "", want: ""},
		{name: "same in both keeps the queue's none", status: "n1", mem: "-", from: "n1", to: "n1", want: ""},
		{name: "in flight, added by update", inFlight: true, from: "", to: "n1", want: "n1"},
		{name: "in flight, removed by update", status: "n1", inFlight: true, from: "n1", to: "", want: "", woken: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFWFixture(t, nil, nil)
			f.h.AddNode(zonedNode("n1", "a")) // 8 CPUs
			big := prioPod("big", 7500, 100)
			big.Status.NominatedNodeName = tc.status
			keptOut := tc.status == "n1" && tc.mem != "-" || tc.mem == "n1"
			if keptOut {
				f.h.AddPod(prioPod("small", 1000, 1))
				info, ok := tryPop(f.q)
				if !ok {
					t.Fatal("nothing to pop")
				}
				defer func() {
					if woken := f.where("small") != schedq.InUnschedulable; woken != tc.woken {
						t.Errorf("small woken %v, want %v", woken, tc.woken)
					}
				}()
				f.h.AddPod(big)
				f.nominate(big, tc.mem)
				out := f.s.ScheduleOne(context.Background(), info)
				if out.Result != Unschedulable || f.where("small") != schedq.InUnschedulable {
					t.Fatalf("small: %v (%s), want parked", out.Result, out.Message)
				}
			} else {
				f.h.AddPod(big)
				f.nominate(big, tc.mem)
			}
			if tc.inFlight {
				if a, ok := tryPop(f.q); !ok || a.Item.Name != "big" {
					t.Fatal("big not popped")
				}
			}
			old, upd := big.DeepCopy(), big.DeepCopy()
			old.Status.NominatedNodeName = tc.from
			upd.Status.NominatedNodeName = tc.to
			upd.Labels = map[string]string{"updated": "yes"}
			f.h.UpdatePod(old, upd)
			if got, _ := f.q.Nomination(framework.Key(big)); got != tc.want {
				t.Errorf("nomination %q, want %q", got, tc.want)
			}
		})
	}
}

// nominate sets p's nomination in the queue as the scheduler would
// ("-" clears it, "" leaves it).
func (f *fixture) nominate(p *v1.Pod, node string) {
	f.t.Helper()
	switch node {
	case "":
		return
	case "-":
		node = ""
	}
	if err := f.q.Nominate(framework.Key(p), node); err != nil {
		f.t.Fatal(err)
	}
}

// TestUpdateFollowsAMembersNominatedNodeName: a gang member's nomination
// follows its status as a lone pod's does, while its group waits for
// members (its quorum not met) too.
func TestUpdateFollowsAMembersNominatedNodeName(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		want     string
	}{
		{name: "added by update", from: "", to: "a", want: "a"},
		{name: "changed by update", from: "a", to: "b", want: "b"},
		{name: "removed by update", from: "a", to: "", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newGangFixture(t)
			f.h.AddNode(node("a", 2000))
			f.h.AddPodGroup(podGroup("train", 2, 0))
			p := memberPod("train-0", "train", 1000)
			p.Status.NominatedNodeName = tc.from
			f.h.AddPod(p)
			upd := p.DeepCopy()
			upd.Status.NominatedNodeName = tc.to
			f.h.UpdatePod(p, upd)
			if got, _ := f.q.Nomination(framework.Key(p)); got != tc.want {
				t.Errorf("nomination %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStandbyKeepsNominationsWhenRecordsArrive: a standby parks a pod it
// never tried when the leader's failure record arrives (repark, which
// takes the pod out of the queue and parks it again); the nomination it
// took from the pod's status, unchanged by the update, stays. Before
// 2026-11-29 the repark dropped it, and the standby, once leader,
// counted the room freed for the pod as free.
func TestStandbyKeepsNominationsWhenRecordsArrive(t *testing.T) {
	tests := []struct {
		name, nominated string
	}{
		{name: "nominated", nominated: "n1"},
		{name: "not nominated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fullCluster(t, 3)
			q, h := newLeader(t, false, nil)
			unrecorded := cluster{nodes: c.nodes, assigned: c.assigned}
			for _, p := range c.pending {
				p.Status.NominatedNodeName = tc.nominated
				bare := p.DeepCopy()
				bare.Annotations, bare.Status.Conditions = nil, nil
				unrecorded.pending = append(unrecorded.pending, bare)
			}
			unrecorded.list(h, false)
			for i, p := range c.pending {
				h.UpdatePod(unrecorded.pending[i], p)
			}
			// Parked, then woken to backoff by the reconcile where the
			// nominations differ from the records': out of activeQ.
			if got := q.Counts(); got.Active != 0 {
				t.Fatalf("after the records: %+v, want all reparked", got)
			}
			for _, p := range c.pending {
				if got, _ := q.Nomination(framework.Key(p)); got != tc.nominated {
					t.Errorf("%s nominated to %q, want %q", p.Name, got, tc.nominated)
				}
			}
		})
	}
}
