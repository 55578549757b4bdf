package scheduler

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"weak"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/profile"
)

// TestReleaseLetsTheTermGo: a leader's terms build a scheduler and a
// queue each on one process-long framework and cache. Once a term's
// scheduler is released, neither keeps it (nor, through it, the term's
// queue) alive: a standby replica does not hold the last term's
// pending pods. Without Release the framework's nominator and
// DefaultPreemption's hooks keep both.
func TestReleaseLetsTheTermGo(t *testing.T) {
	fw := defaultFramework(t)
	for _, tc := range []struct {
		name    string
		release bool
		gone    bool
	}{
		{name: "released", release: true, gone: true},
		{name: "kept without Release", release: false, gone: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache() // lives on, as the process's does
			s, q := term(t, fw, c, tc.release)
			for range 3 {
				runtime.GC()
			}
			if gone := s.Value() == nil && q.Value() == nil; gone != tc.gone {
				t.Fatalf("scheduler and queue collected: %v, want %v", gone, tc.gone)
			}
		})
	}
}

// term runs one term on fw and c: a scheduler with preemption on
// schedules a pod that fits only by preempting (so DefaultPreemption's
// hooks run and the pod is nominated), then ends and, if release, is released. It returns weak pointers to
// the term's scheduler and queue.
func term(t *testing.T, fw *profile.Framework, c *Cache, release bool) (weak.Pointer[Scheduler], weak.Pointer[schedq.Queue[types.NamespacedName, *v1.Pod]]) {
	t.Helper()
	q := queueOn(t, fw)
	s := mustNew(t, q, c, &syncBinder{}, &recReporter{}, Options{Profiles: []*profile.Framework{fw}, Rand: rand.New(rand.NewPCG(1, 1))})
	if err := s.EnablePreemption(PreemptionOptions{Evictor: &syncEvictor{hold: true}}); err != nil {
		t.Fatal(err)
	}
	h := &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
	h.AddNode(node("a", 4000))
	h.AddPod(runningPod("low", "a", 4000, 1, t0))
	h.AddPod(prioPod("high", 2000, 100))
	info, err := q.Pop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out := s.ScheduleOne(context.Background(), info); out.Result != Unschedulable || out.Nominated != "a" {
		t.Fatalf("the preemptor: %v, nominated %q: %s", out.Result, out.Nominated, out.Message)
	}
	s.Wait()
	q.Close()
	if release {
		s.Release()
	}
	return weak.Make(s), weak.Make(q)
}
