package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// TestHintsRejectForeignObjects feeds every hint objects of the wrong kind:
// each must answer Queue with an error, which the queue counts as Queue.
func TestHintsRejectForeignObjects(t *testing.T) {
	for _, pl := range Default(LeastAllocated).Enqueue {
		for _, reg := range pl.EventsToRegister() {
			t.Run(pl.Name()+"/"+reg.Event.Label, func(t *testing.T) {
				h, err := reg.Fn(mkPod("p"), "old", "new")
				if err == nil || h != schedq.HintQueue {
					t.Fatalf("hint = %v, %v; want Queue and an error", h, err)
				}
			})
		}
	}
}

func TestHintsRejectEmptyEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   schedq.HintFn[*v1.Pod]
	}{
		{"node event without a node", NodeName{}.afterNodeAdd},
		{"pod event without a pod", NewNodeResourcesFit(LeastAllocated).afterPodChange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h, err := tc.fn(mkPod("p"), nil, nil); err == nil || h != schedq.HintQueue {
				t.Fatalf("hint = %v, %v; want Queue and an error", h, err)
			}
		})
	}
}

func TestSamePod(t *testing.T) {
	named := func(ns, name string, uid string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: k8stypes.UID(uid)}}
	}
	for _, tc := range []struct {
		name string
		a, b *v1.Pod
		want bool
	}{
		{"same UID", named("d", "p", "1"), named("d", "p", "1"), true},
		{"recreated under the same name", named("d", "p", "1"), named("d", "p", "2"), false},
		{"no UIDs, same name", named("d", "p", ""), named("d", "p", ""), true},
		{"no UIDs, other namespace", named("d", "p", ""), named("e", "p", ""), false},
		{"nil", named("d", "p", "1"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := samePod(tc.a, tc.b); got != tc.want {
				t.Fatalf("samePod = %v, want %v", got, tc.want)
			}
		})
	}
}
