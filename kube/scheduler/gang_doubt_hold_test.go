package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// TestGangMemberFailsThenTermEndsWithTheOtherInDoubt: a group attempt
// binds train-0 and train-1; train-0's binding fails (it is held to
// retry with its group), then the term ends with train-1's binding in
// flight, left in doubt. The next term's queue is rebuilt from the
// informer's pending pods and takes train-0 in; the in-doubt binding is
// settled (landed, not landed, or not yet), and the new term places
// train-0. The attempt's tally used to wait for train-1's binding for
// good, so the cache kept holding train-0 as retrying for the ended
// term's tally (and that term's scheduler with it): the debug endpoints
// then said that train-0's binding had failed and that it waited for its
// group's bindings, while the new term had it assumed with its binding
// under way.
func TestGangMemberFailsThenTermEndsWithTheOtherInDoubt(t *testing.T) {
	tests := []struct {
		name string
		// doubtFirst: the term ends, train-1's binding is left in doubt,
		// and then train-0's binding fails (an answer came for it).
		doubtFirst bool
		// settle settles train-1's binding in doubt through the new
		// term's handlers, before the new term's first pop, as
		// terms.settleInDoubt's first round does; nil: left in doubt (the
		// read failed).
		settle func(h *Handlers, d InDoubt)
		// together: train-1 is queued again and tried with train-0.
		together bool
	}{
		{name: "in doubt, then landed", settle: func(h *Handlers, d InDoubt) { h.SettleInDoubt(d, boundTo(d.Pod, "a")) }},
		{name: "in doubt, then not landed", settle: func(h *Handlers, d InDoubt) { h.SettleInDoubt(d, d.Pod) }, together: true},
		{name: "still in doubt"},
		{name: "the other in doubt first, then the member fails", doubtFirst: true, settle: func(h *Handlers, d InDoubt) { h.SettleInDoubt(d, d.Pod) }, together: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, w, nb, a, b, end := trainInATerm(t)
			defer end()
			if tc.doubtFirst {
				end() // the term ends with both bindings in flight
				nb.done["train-1"](context.Canceled)
				nb.done["train-0"](apierrors.NewBadRequest("refused")) // an answer: not in doubt
			} else {
				nb.done["train-0"](errors.New("etcd timeout"))
				if why, held := f.c.HeldApart(framework.Key(a)); !held || !strings.Contains(why, "binding failed") {
					t.Fatalf("train-0 after its failure: %q %v, want held to retry", why, held)
				}
				if _, _, ok := f.q.Get(framework.Key(a)); ok {
					t.Fatal("train-0 given back while train-1's binding is under way")
				}
				end() // the term ends with train-1's binding in flight
				nb.done["train-1"](context.Canceled)
			}
			if !slices.ContainsFunc(f.r.failures, func(m string) bool {
				return strings.HasPrefix(m, "train-0: ") && strings.Contains(m, "0 of minCount 2 bound, 1 in doubt")
			}) {
				t.Errorf("train-0's failure is not reported with the member in doubt: %q", f.r.failures)
			}
			doubt := f.c.InDoubt()
			if len(doubt) != 1 || doubt[0].Pod.Name != "train-1" {
				t.Fatalf("in doubt: %v, want train-1", doubt)
			}

			// The next term: a queue rebuilt from the informer's pending
			// pods (terms.rebuild), its bindings in doubt settled first.
			q2, err := schedq.New(testQueueConfig(t))
			if err != nil {
				t.Fatal(err)
			}
			h2 := *f.h
			h2.Queue = q2
			h2.AddPodGroup(podGroup("train", 2, 0))
			h2.AddPods([]*v1.Pod{a, b}, nil)
			if tc.settle != nil {
				tc.settle(&h2, doubt[0])
			}
			if _, _, ok := q2.Get(framework.Key(a)); !ok {
				t.Fatal("train-0 is not in the new term's queue")
			}
			if why, held := f.c.HeldApart(framework.Key(a)); held {
				t.Errorf("train-0, in the new term's queue, still held apart by the ended term: %q", why)
			}
			if n := len(f.c.retrying); n != 0 {
				t.Errorf("the cache holds %d members to retry, want none: the ended term's tally keeps them", n)
			}

			nb2 := &namedBinder{done: map[string]func(error){}, waiting: map[string]bool{}}
			s2 := mustNew(t, q2, f.c, nb2, warnReporter{f.r, w}, Options{})
			info, err := q2.Pop(ended)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(info.Members); got != map[bool]int{false: 1, true: 2}[tc.together] {
				t.Errorf("the new term tries %d members, together %v", got, tc.together)
			}
			if out := s2.ScheduleOne(context.Background(), info); out.Result != Scheduled {
				t.Fatalf("new term: %+v", out)
			}
			if why, held := f.c.HeldApart(framework.Key(a)); !held || !strings.Contains(why, "assumed on node a") {
				t.Errorf("train-0, assumed by the new term: %q %v, want assumed on node a while its binding is under way", why, held)
			}
			nb2.done["train-0"](nil)
			f.h.UpdatePod(a, boundTo(a, "a"))
			if _, held := f.c.HeldApart(framework.Key(a)); held {
				t.Errorf("train-0, bound, still held apart")
			}
		})
	}
}

// TestGangMemberFailsThenTermEndsWithTheOtherSeenBound: as
// TestGangMemberFailsThenTermEndsWithTheOtherInDoubt, but the informer
// shows train-1 bound before its cancelled binding returns, so it is not
// left in doubt (the cache no longer assumes it). Its binding used to end
// on the cancellation without a word to its attempt's tally, which then
// never ended either: train-0 stayed held to retry for the ended term.
func TestGangMemberFailsThenTermEndsWithTheOtherSeenBound(t *testing.T) {
	f, _, nb, a, b, end := trainInATerm(t)
	defer end()
	nb.done["train-0"](errors.New("etcd timeout"))
	end()
	f.h.UpdatePod(b, boundTo(b, "a")) // its request landed; the informer says so first
	nb.done["train-1"](context.Canceled)
	if len(f.c.InDoubt()) != 0 {
		t.Fatalf("in doubt: %v, want none", f.c.InDoubt())
	}
	if why, held := f.c.HeldApart(framework.Key(a)); held {
		t.Errorf("train-0 still held apart once every binding of its attempt has ended: %q", why)
	}
	if _, _, ok := f.q.Get(framework.Key(a)); !ok {
		t.Errorf("train-0 not given back to its term's queue")
	}
}

// trainInATerm returns a fixture whose scheduler has placed the gang
// train (train-0 and train-1, minCount 2, on node a) in one attempt
// under a term's context, both bindings waiting on nb; end ends the term.
func trainInATerm(t *testing.T) (f *fixture, w *warnings, nb *namedBinder, a, b *v1.Pod, end context.CancelFunc) {
	t.Helper()
	f, w, nb = gangWithNamedBinder(t, map[string]bool{})
	f.h.AddNode(node("a", 4000))
	f.h.AddPodGroup(podGroup("train", 2, 0))
	a, b = memberPod("train-0", "train", 1000), memberPod("train-1", "train", 1000)
	f.h.AddPod(a)
	f.h.AddPod(b)
	term, end := context.WithCancel(context.Background())
	info, err := f.q.Pop(ended)
	if err != nil {
		end()
		t.Fatal(err)
	}
	if out := f.s.ScheduleOne(term, info); out.Result != Scheduled {
		end()
		t.Fatalf("the term's attempt: %+v", out)
	}
	return f, w, nb, a, b, end
}
