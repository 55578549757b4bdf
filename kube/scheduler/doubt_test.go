package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/schedq/schedq/kube/framework"
)

// TestBindingInDoubtWhenItsTermEnds: a binding that ends without an
// answer of the API server's (cancelled, or a 5xx) once its term's
// context has ended keeps its pod assumed, in doubt; a refusal, or a
// failure while the term goes on, forgets it as before.
func TestBindingInDoubtWhenItsTermEnds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		termEnds  bool // the term's context ends while the request is in flight
		wantDoubt bool
	}{
		{name: "cancelled as the term ended", err: context.Canceled, termEnds: true, wantDoubt: true},
		{name: "server error as the term ended", err: apierrors.NewInternalError(errors.New("etcd timeout")), termEnds: true, wantDoubt: true},
		{name: "refused as the term ended", err: apierrors.NewBadRequest("no"), termEnds: true, wantDoubt: false},
		{name: "server error while the term goes on", err: apierrors.NewInternalError(errors.New("etcd timeout")), termEnds: false, wantDoubt: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := newAPIFixture(t, 0, func(string) error {
				if tc.termEnds {
					cancel()
				}
				return tc.err
			})
			f.h.AddNode(node("n", 1000))
			p := pod("p", 100)
			f.h.AddPod(p)
			info, err := f.q.Pop(ended)
			if err != nil {
				t.Fatal(err)
			}
			f.s.ScheduleOne(ctx, info)
			f.binder.Wait()
			_, placed := f.c.NodeOf(framework.Key(p))
			doubt := f.c.InDoubt()
			if placed != tc.wantDoubt || (len(doubt) == 1) != tc.wantDoubt {
				t.Fatalf("placed %v, in doubt %v; want both %v", placed, doubt, tc.wantDoubt)
			}
			if tc.wantDoubt && doubt[0].Node != "n" {
				t.Errorf("in doubt on %q, want n", doubt[0].Node)
			}
		})
	}
}

// inDoubtOn puts p in doubt on node, as a binding whose term ended.
func inDoubtOn(t *testing.T, c *Cache, p *v1.Pod, node string) {
	t.Helper()
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Assume(pi, node, nil); err != nil {
		t.Fatal(err)
	}
	if !c.keepInDoubt(p) {
		t.Fatal("not kept in doubt")
	}
}

func boundTo(p *v1.Pod, node string) *v1.Pod {
	cp := p.DeepCopy()
	cp.Spec.NodeName = node
	return cp
}

// TestSettleInDoubt: the API server's answer settles a binding in doubt:
// bound, the pod keeps its room until the informer shows it; not bound,
// it is forgotten and queued again; gone or replaced, it is forgotten.
func TestSettleInDoubt(t *testing.T) {
	p := pod("p", 1000)
	replaced := p.DeepCopy()
	replaced.UID = "uid-p-2"
	for _, tc := range []struct {
		name       string
		now        *v1.Pod // the pod as the API server has it; nil: not found
		wantPlaced bool
		wantQueued bool
	}{
		{name: "bound to its node", now: boundTo(p, "n"), wantPlaced: true},
		{name: "bound elsewhere", now: boundTo(p, "m"), wantPlaced: true},
		{name: "not bound", now: p, wantQueued: true},
		{name: "gone", now: nil},
		{name: "replaced", now: replaced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.h.AddNode(node("n", 1000))
			f.h.AddNode(node("m", 1000))
			inDoubtOn(t, f.c, p, "n")
			d := f.c.InDoubt()
			if len(d) != 1 {
				t.Fatalf("in doubt: %v", d)
			}
			f.h.SettleInDoubt(d[0], tc.now)
			key := framework.Key(p)
			_, placed := f.c.NodeOf(key)
			_, _, queued := f.q.Get(key)
			if placed != tc.wantPlaced || queued != tc.wantQueued {
				t.Errorf("placed %v, queued %v; want %v, %v", placed, queued, tc.wantPlaced, tc.wantQueued)
			}
			if left := f.c.InDoubt(); len(left) != 0 {
				t.Errorf("still in doubt: %v", left)
			}
			if tc.wantPlaced {
				// The informer then shows where it is.
				f.h.UpdatePod(p, tc.now)
				if n, _ := f.c.NodeOf(key); n != tc.now.Spec.NodeName {
					t.Errorf("after the informer: on %q, want %q", n, tc.now.Spec.NodeName)
				}
			}
		})
	}
}

// TestSettleInDoubtRacesTheInformer settles bindings in doubt while the
// informer shows half of them bound and cycles read the cache (run it
// with -race): each pod ends placed once if bound, queued if not, and
// the node counts exactly the bound ones.
func TestSettleInDoubtRacesTheInformer(t *testing.T) {
	const pods = 200
	f := newFixture(t)
	f.h.AddNode(node("n", 1000*pods))
	all := make([]*v1.Pod, pods)
	for i := range all {
		all[i] = pod(fmt.Sprintf("p%03d", i), 1000)
		inDoubtOn(t, f.c, all[i], "n")
	}
	bound := func(i int) bool { return i%2 == 1 }
	doubt := f.c.InDoubt()
	var wg sync.WaitGroup
	wg.Go(func() { // the next term's reads
		for _, d := range doubt {
			i := index(d.Pod.Name)
			now := d.Pod
			if bound(i) {
				now = boundTo(d.Pod, "n")
			}
			f.h.SettleInDoubt(d, now)
		}
	})
	wg.Go(func() { // the informer
		for i := pods - 1; i >= 0; i-- {
			if bound(i) {
				f.h.UpdatePod(all[i], boundTo(all[i], "n"))
			}
		}
	})
	wg.Go(func() { // cycles
		for range pods {
			f.c.View(func(s framework.Snapshot) {
				if ni, ok := s.Node("n"); ok && len(ni.Pods) > pods {
					t.Errorf("%d pods on n", len(ni.Pods))
				}
			})
			_ = f.c.InDoubt()
		}
	})
	wg.Wait()
	onNode := 0
	f.c.View(func(s framework.Snapshot) {
		ni, _ := s.Node("n")
		onNode = len(ni.Pods)
	})
	if onNode != pods/2 {
		t.Errorf("%d pods on n, want %d", onNode, pods/2)
	}
	for i, p := range all {
		key := framework.Key(p)
		_, placed := f.c.NodeOf(key)
		_, _, queued := f.q.Get(key)
		if placed != bound(i) || queued == bound(i) {
			t.Errorf("%s: placed %v, queued %v; bound %v", key, placed, queued, bound(i))
		}
	}
	if left := f.c.InDoubt(); len(left) != 0 {
		t.Errorf("still in doubt: %d", len(left))
	}
}

func index(name string) int {
	var i int
	fmt.Sscanf(name, "p%03d", &i)
	return i
}

// cancellingBinder ends the term (cancel) at the binding of each pod named
// in doubtful, which then ends with the context's error; the others bind.
type cancellingBinder struct {
	syncBinder
	cancel   context.CancelFunc
	doubtful map[string]bool
}

func (b *cancellingBinder) Bind(ctx context.Context, p *v1.Pod, node string, start func() bool, done func(error)) {
	if !Started(start, done) {
		return
	}
	if b.doubtful[p.Name] {
		b.cancel()
		done(context.Canceled)
		return
	}
	b.syncBinder.Bind(ctx, p, node, nil, done)
}

// TestGangMembersInDoubt: members of a group bound together whose
// bindings end with their term keep their room and count as placed
// members of their group; settled unbound, they no longer count and go
// back to the queue.
func TestGangMembersInDoubt(t *testing.T) {
	f, w := newGangFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &cancellingBinder{cancel: cancel, doubtful: map[string]bool{"train-1": true, "train-2": true}}
	f.s = mustNew(t, f.q, f.c, b, warnReporter{f.r, w}, Options{})
	f.h.AddNode(node("a", 4000))
	f.h.AddPodGroup(podGroup("train", 4, 0))
	f.addGang("train", 4, 1000)
	info, err := f.q.Pop(ended)
	if err != nil {
		t.Fatal(err)
	}
	f.s.ScheduleOne(ctx, info)
	if n := f.c.GroupPlaced("default/train"); n != 4 {
		t.Fatalf("%d members placed after the term ended, want 4 (2 bound, 2 in doubt)", n)
	}
	doubt := f.c.InDoubt()
	if len(doubt) != 2 || doubt[0].Pod.Name != "train-1" || doubt[1].Pod.Name != "train-2" {
		t.Fatalf("in doubt: %v", doubt)
	}
	f.h.SettleInDoubt(doubt[0], boundTo(doubt[0].Pod, "a")) // its binding was made
	f.h.SettleInDoubt(doubt[1], doubt[1].Pod)               // not made
	if n := f.c.GroupPlaced("default/train"); n != 3 {
		t.Errorf("%d members placed once settled, want 3", n)
	}
	if loc := f.where("train-2"); loc == 0 {
		t.Errorf("train-2, settled unbound, is not queued")
	}
}
