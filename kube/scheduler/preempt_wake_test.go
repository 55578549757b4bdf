package scheduler

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// TestFailedEvictionWakesThePreemptor: a preemptor whose victims could
// not be evicted is parked behind the filters that rejected it, and no
// deletion will come to wake it; it is activated, whether the Evictor
// fails while its cycle is still under way (it then backs off, as any pod
// that an event reached during its attempt) or after the pod was parked.
func TestFailedEvictionWakesThePreemptor(t *testing.T) {
	tests := []struct {
		name string
		hold bool // the eviction fails after the cycle (a real evictor's goroutine)
		want schedq.Location
	}{
		{name: "fails during the cycle", want: schedq.InBackoff},
		{name: "fails after the pod is parked", hold: true, want: schedq.InActive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, e := newPreemptFixture(t)
			e.fail = errors.New("apiserver says no")
			e.hold = tc.hold
			f.h.AddNode(node("a", 2000))
			f.h.AddPod(runningPod("low", "a", 2000, 1, t0))
			f.h.AddPod(prioPod("high", 2000, 100))
			if out := f.once(); out.Nominated != "a" {
				t.Fatalf("result %v, nominated %q: %s", out.Result, out.Nominated, out.Message)
			}
			key := types.NamespacedName{Namespace: "default", Name: "high"}
			if tc.hold {
				if _, loc, _ := f.q.Get(key); loc != schedq.InUnschedulable {
					t.Fatalf("preemptor %v before the eviction ended, want parked", loc)
				}
				e.held[0]()
			}
			if _, loc, _ := f.q.Get(key); loc != tc.want {
				t.Fatalf("preemptor %v after its eviction failed, want %v", loc, tc.want)
			}
			if got := f.nomination("high"); got != "" {
				t.Fatalf("still nominated to %q", got)
			}
		})
	}
}

// TestFailedEvictionSparesAPodRecreatedUnderTheName: when a preemptor is
// deleted and a pod of the same name (a StatefulSet's, say) is created
// while its victims are being evicted, the failure of that eviction ends
// the old pod's preemption only: the new pod keeps the nomination of its
// own preemption, and is not woken for the old pod's failure.
func TestFailedEvictionSparesAPodRecreatedUnderTheName(t *testing.T) {
	tests := []struct {
		name    string
		errs    error // the old preemption's result
		wantNom string
		wantLoc schedq.Location
	}{
		{name: "old preemption fails", errs: errors.New("apiserver says no"), wantNom: "a", wantLoc: schedq.InUnschedulable},
		// The victim's deletion wakes the new pod: its room is free.
		{name: "old preemption succeeds", wantNom: "a", wantLoc: schedq.InBackoff},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, e := newPreemptFixture(t)
			e.hold = true
			f.h.AddNode(node("a", 2000))
			f.h.AddPod(runningPod("low", "a", 2000, 1, t0))
			old := prioPod("high", 2000, 100)
			f.h.AddPod(old)
			if out := f.once(); out.Nominated != "a" {
				t.Fatalf("old pod: nominated %q: %s", out.Nominated, out.Message)
			}
			f.h.DeletePod(old)
			again := prioPod("high", 2000, 100)
			again.UID = "uid-high-2"
			f.h.AddPod(again)
			// The old pod's victim is leaving: the new pod is nominated
			// there with no victim of its own.
			if out := f.once(); out.Nominated != "a" || len(e.held) != 2 {
				t.Fatalf("new pod: nominated %q, calls %v: %s", out.Nominated, e.calls, out.Message)
			}
			key := types.NamespacedName{Namespace: "default", Name: "high"}
			e.fail = tc.errs
			e.held[0]()
			if got := f.nomination("high"); got != tc.wantNom {
				t.Fatalf("new pod nominated to %q after the old pod's preemption ended, want %q", got, tc.wantNom)
			}
			if _, loc, _ := f.q.Get(key); loc != tc.wantLoc {
				t.Fatalf("new pod %v after the old pod's preemption ended, want %v", loc, tc.wantLoc)
			}
		})
	}
}
