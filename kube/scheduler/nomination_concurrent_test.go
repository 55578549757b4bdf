package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestNominationsUnderConcurrentRecreation runs preemption cycles on the
// scheduling loop while another goroutine deletes the pending pods and
// creates them again under their names (new UIDs), under -race: the
// cycles' nominations, written under the pod events' lock that the
// handlers hold, must not deadlock with the handlers, and each
// nomination left in the queue must be that of the pod now under its
// name (the recreated pods come with none, so any they hold is their
// own cycle's).
func TestNominationsUnderConcurrentRecreation(t *testing.T) {
	const n = 12
	f, e := newPreemptFixture(t)
	for i := range 3 {
		f.h.AddNode(node(fmt.Sprintf("n%d", i), 4000))
		f.h.AddPod(runningPod(fmt.Sprintf("low%d", i), fmt.Sprintf("n%d", i), 4000, 1, t0))
	}
	var mu sync.Mutex
	current := map[string]types.UID{}
	mk := func(i, gen int) *v1.Pod {
		p := prioPod(fmt.Sprintf("high%d", i), 4000, int32(100+i))
		p.UID = types.UID(fmt.Sprintf("uid-high%d-%d", i, gen))
		mu.Lock()
		current[p.Name] = p.UID
		mu.Unlock()
		return p
	}
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = mk(i, 0)
		f.h.AddPod(pods[i])
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cancel()
		for gen := 1; gen <= 3; gen++ {
			for i := range pods {
				old := pods[i]
				pods[i] = mk(i, gen)
				f.h.DeletePod(old)
				f.h.AddPod(pods[i])
			}
		}
	})
	for cycles := 0; cycles < 200; cycles++ {
		info, err := f.q.Pop(ended)
		if err != nil {
			if ctx.Err() != nil {
				break // nothing left to try, and no pod will come
			}
			runtime.Gosched()
			continue
		}
		f.s.ScheduleOne(context.Background(), info)
	}
	wg.Wait()
	if len(e.calls) == 0 {
		t.Fatal("no preemption ran: nothing was exercised")
	}
	for _, target := range f.q.NominatedTargets() {
		for _, p := range f.q.Nominated(target) {
			if want := current[p.Name]; p.UID != want {
				t.Errorf("%s nominated to %s is of UID %s, not the pod under that name (%s)", p.Name, target, p.UID, want)
			}
		}
	}
}
