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
