package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// recReleaser records the releases and ends them at once.
type recReleaser struct {
	mu       sync.Mutex
	released [][]string
}

func (r *recReleaser) Wait() {} // it releases before Release returns

func (r *recReleaser) Release(_ context.Context, _ string, members []*v1.Pod, _ string, done func([]error)) {
	var names []string
	for _, p := range members {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	r.mu.Lock()
	r.released = append(r.released, names)
	r.mu.Unlock()
	done(nil)
}

func (r *recReleaser) got() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.released)
}

// owned gives p a controller, as a Job's pods have.
func owned(p *v1.Pod) *v1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "job", Controller: &yes}}
	return p
}

// partialGang is a new leader's view after a failover mid-gang-binding:
// gang train (minCount 4, 1 cpu each) has 2 members bound on n1, which
// they fill, and 2 pending that fit nowhere (n2 is full of other pods).
func partialGang(t *testing.T, controlled bool) (*fixture, *warnings, *recReleaser, *time.Time) {
	t.Helper()
	f, w := newGangFixture(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.s = mustNew(t, f.q, f.c, f.b, warnReporter{f.r, w}, Options{Now: func() time.Time { return now }})
	rel := &recReleaser{}
	if err := f.s.EnableGangRelease(GangReleaseOptions{Releaser: rel, After: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	f.h.AddNode(node("n1", 2000))
	f.h.AddNode(node("n2", 2000))
	f.h.AddPodGroup(podGroup("train", 4, 0))
	for i := range 2 {
		p := memberPod(fmt.Sprintf("train-%d", i), "train", 1000)
		p.UID = types.UID(p.Name)
		p.Spec.NodeName = "n1"
		if controlled {
			p = owned(p)
		}
		f.h.AddPod(p)
	}
	hi := pod("high", 2000)
	hi.Spec.NodeName = "n2"
	f.h.AddPod(hi)
	for i := 2; i < 4; i++ {
		f.h.AddPod(owned(memberPod(fmt.Sprintf("train-%d", i), "train", 1000)))
	}
	return f, w, rel, &now
}

// wake adds a node with room for one member, which wakes the parked gang
// (NodeResourcesFit's hint), and deletes it before the gang is tried.
func (f *fixture) wake(name string) {
	f.h.AddNode(node(name, 1000))
	f.h.DeleteNode(node(name, 1000))
}

// A gang left below its minCount by a failover, whose missing members do
// not fit, keeps its bound members through the grace period; at its first
// failed attempt after it, they are released (deleted, for their
// controller to recreate); the gang is then scheduled whole once there is
// room for all of it.
func TestPartialGangReleasedAfterGrace(t *testing.T) {
	f, _, rel, now := partialGang(t, true)
	if out := f.once(); out.Result != Unschedulable {
		t.Fatalf("first attempt: %+v", out)
	}
	*now = now.Add(29 * time.Second)
	f.wake("small-1")
	f.once()
	if got := rel.got(); len(got) != 0 {
		t.Fatalf("released within the grace period: %v", got)
	}
	*now = now.Add(time.Second)
	f.wake("small-2")
	f.once()
	if got := rel.got(); len(got) != 1 || !slices.Equal(got[0], []string{"train-0", "train-1"}) {
		t.Fatalf("releases %v, want the two bound members once", got)
	}
	// The deletions arrive; the Job recreates the two members; a node
	// with room for the whole gang (with n1, now free) arrives.
	for i := range 2 {
		p := owned(memberPod(fmt.Sprintf("train-%d", i), "train", 1000))
		p.UID, p.Spec.NodeName = types.UID(p.Name), "n1"
		f.h.DeletePod(p)
		f.h.AddPod(owned(memberPod(fmt.Sprintf("train-%d-new", i), "train", 1000)))
	}
	f.h.AddNode(node("n3", 2000))
	if out := f.once(); out.Result != Scheduled {
		t.Fatalf("the released gang, with room for all of it: %+v", out)
	}
	if len(f.b.binds) != 4 {
		t.Fatalf("bound %v, want the 4 members of the whole gang", f.b.binds)
	}
	if c := f.q.Counts(); c.Active+c.Backoff+c.Unschedulable+c.InFlight != 0 {
		t.Fatalf("queue %+v after the gang was bound whole", c)
	}
	if got := rel.got(); len(got) != 1 {
		t.Fatalf("released again: %v", got)
	}
}

// A gang whose bound members have no controller is never released (no
// one would recreate them): a warning, once, says what to do.
func TestPartialGangOfBarePodsIsNotReleased(t *testing.T) {
	f, w, rel, now := partialGang(t, false)
	f.once()
	for i := range 3 {
		*now = now.Add(time.Minute)
		f.wake(fmt.Sprintf("small-%d", i))
		f.once()
	}
	if got := rel.got(); len(got) != 0 {
		t.Fatalf("bare pods released: %v", got)
	}
	n := 0
	for _, msg := range w.got {
		if strings.Contains(msg, "GangBelowMinCount") && strings.Contains(msg, "no controller") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d GangBelowMinCount warnings, want 1: %v", n, w.got)
	}
	if _, loc, ok := f.q.Get(types.NamespacedName{Namespace: "default", Name: "train-2"}); !ok || loc == schedq.InFlight {
		t.Fatalf("the pending members are %v (queued %v)", loc, ok)
	}
}
