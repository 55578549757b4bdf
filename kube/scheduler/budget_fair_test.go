package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/klog/v2"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/profile"
)

// TestWakeBudgetFairBetweenNamespaces: with --fair-namespaces, a node
// that joins with room for two of many parked pods of one template wakes
// those of the namespace that used the queue least, as fairness would pop
// them, not the two that a busy namespace parked first. (Before, the room
// went by arrival, and while room came a node at a time a namespace
// behind a flood got none of it until the flood's parked pods ran out.)
func TestWakeBudgetFairBetweenNamespaces(t *testing.T) {
	tests := []struct {
		name         string
		flood, small int
		room         int64 // milliCPU of the new node; each pod asks 1000
		wantSmall    int   // small's pods woken
		wantFlood    int
	}{
		{"room for two", 6, 2, 2000, 2, 0},
		{"room for four", 6, 2, 4000, 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fw := defaultFramework(t)
			c := NewCache()
			qc := QueueConfig()
			if err := UseFrameworkHints(context.Background(), &qc, fw, klog.Background()); err != nil {
				t.Fatal(err)
			}
			qc.Budget, qc.ClassBudget = WakeBudgetOn(c, fw), true
			qc.Fairness = NamespaceFairness(nil, 0)
			q, err := schedq.New(qc)
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{t: t, q: q, c: c, b: &syncBinder{}, r: &recReporter{}}
			f.h = &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
			f.s = mustNew(t, q, c, f.b, f.r, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 1))})
			f.h.AddNode(node("full", 500))
			add := func(ns string, n int) {
				for i := range n {
					p := pod(fmt.Sprintf("%s-%d", ns, i), 1000)
					p.Namespace = ns
					f.h.AddPod(p)
				}
			}
			add("flood", tc.flood)
			for range tc.flood {
				if out := f.once(); out.Result != Unschedulable {
					t.Fatalf("%+v", out)
				}
			}
			add("small", tc.small)
			for range tc.small {
				if out := f.once(); out.Result != Unschedulable {
					t.Fatalf("%+v", out)
				}
			}
			n := node("new", tc.room)
			f.h.AddNode(n)
			woken := map[string]int{}
			for ns, count := range map[string]int{"flood": tc.flood, "small": tc.small} {
				for i := range count {
					p := pod(fmt.Sprintf("%s-%d", ns, i), 1000)
					p.Namespace = ns
					if _, loc, _ := q.Get(framework.Key(p)); loc != schedq.InUnschedulable {
						woken[ns]++
					}
				}
			}
			if woken["small"] != tc.wantSmall || woken["flood"] != tc.wantFlood {
				t.Fatalf("woken %v, want small %d, flood %d", woken, tc.wantSmall, tc.wantFlood)
			}
		})
	}
}
