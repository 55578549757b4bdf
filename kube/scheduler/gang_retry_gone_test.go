package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/schedq/schedq/kube/framework"
)

// namedBinder holds each binding until the test ends it, by pod name.
// A binding starts (its request is sent) at once, but for the pods named
// in waiting: theirs starts as the test ends it (it waited for a slot).
type namedBinder struct {
	done    map[string]func(error)
	waiting map[string]bool
}

func (b *namedBinder) Bind(_ context.Context, p *v1.Pod, _ string, start func() bool, done func(error)) {
	started := !b.waiting[p.Name] && start()
	b.done[p.Name] = func(err error) {
		if !started && !start() {
			err = ErrNodeDeleted
		}
		done(err)
	}
}

// TestGangRetryOfAMemberGoneMeanwhile: a member whose binding failed waits,
// out of every queue, for the other bindings of its group attempt before
// it is given back to the queue (gangBinds). A member deleted, recreated
// under its name, or bound by someone else meanwhile must not be given
// back: the informer's event that said so found nothing to take out of the
// queue, so a member given back then stayed queued for good, a ghost that
// the group's next attempt counted towards its minCount (and a bound pod
// counted twice: in the cache and in the queue).
func TestGangRetryOfAMemberGoneMeanwhile(t *testing.T) {
	failed := errors.New("etcd timeout")
	recreated := memberPod("train-1", "train", 1000)
	recreated.UID = "uid-train-1-new"
	tests := []struct {
		name string
		// during runs while train-0's binding is still under way; it ends
		// train-1's binding (fail) before or after its own events.
		during func(f *fixture, fail func())
		queued bool   // train-1 is in the queue at the end
		uid    string // and this is its UID
		placed int    // members bound or assumed at the end
	}{
		{
			name:   "still pending: given back with its group",
			during: func(f *fixture, fail func()) { fail() },
			queued: true, uid: "uid-train-1", placed: 2,
		},
		{
			name: "deleted after its binding failed",
			during: func(f *fixture, fail func()) {
				fail()
				f.h.DeletePod(memberPod("train-1", "train", 1000))
			},
			placed: 2,
		},
		{
			name: "deleted while its binding was under way",
			during: func(f *fixture, fail func()) {
				f.h.DeletePod(memberPod("train-1", "train", 1000))
				fail()
			},
			placed: 2,
		},
		{
			name: "bound by someone else after its binding failed",
			during: func(f *fixture, fail func()) {
				fail()
				p := memberPod("train-1", "train", 1000)
				f.h.UpdatePod(p, boundTo(p, "a"))
			},
			placed: 3,
		},
		{
			name: "its node deleted before its binding started, then it",
			during: func(f *fixture, fail func()) {
				f.h.DeleteNode(node("a", 8000)) // aborts train-1's binding alone
				f.h.DeletePod(memberPod("train-1", "train", 1000))
				fail()
			},
			placed: 2,
		},
		{
			name: "recreated under its name after its binding failed",
			during: func(f *fixture, fail func()) {
				fail()
				f.h.UpdatePod(memberPod("train-1", "train", 1000), recreated)
			},
			queued: true, uid: string(recreated.UID), placed: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _, nb := gangWithNamedBinder(t, map[string]bool{"train-1": true})
			f.h.AddNode(node("a", 8000))
			f.h.AddPodGroup(podGroup("train", 3, 0))
			f.addGang("train", 3, 1000)
			if out := f.once(); out.Result != Scheduled || len(nb.done) != 3 {
				t.Fatalf("outcome %+v, %d bindings", out, len(nb.done))
			}
			nb.done["train-2"](nil)
			tc.during(f, func() { nb.done["train-1"](failed) })
			nb.done["train-0"](nil) // the last binding: the failed members go back now
			info, _, queued := f.q.Get(framework.Key(pod("train-1", 0)))
			if queued != tc.queued {
				t.Fatalf("train-1 queued = %v, want %v", queued, tc.queued)
			}
			if queued && string(info.Item.UID) != tc.uid {
				t.Errorf("train-1 queued with UID %s, want %s", info.Item.UID, tc.uid)
			}
			if n := f.c.GroupPlaced("default/train"); n != tc.placed {
				t.Errorf("%d members placed, want %d", n, tc.placed)
			}
			if tc.queued && tc.uid == "uid-train-1" {
				x, _ := f.q.Explain(framework.Key(pod("train-1", 0)))
				if !strings.Contains(x.Message, "2 of minCount 3 bound") {
					t.Errorf("Explain message %q", x.Message)
				}
			}
		})
	}
}

// TestRetryHoldIsItsAttempts: a member held as retrying is given back by
// the group attempt whose binding failed, not by another attempt that
// failed to bind the same pod (an attempt of an ended term, whose last
// binding ends after the next term has tried the member again): that one
// would take the hold, and the next term's attempt, finding none, would
// not give the member back.
func TestRetryHoldIsItsAttempts(t *testing.T) {
	tests := []struct {
		name      string
		by        string // the attempt that takes the hold
		want      bool
		wantAfter bool // the hold of the attempt "next" is still there
	}{
		{"the attempt that failed last", "next", true, false},
		{"an ended term's attempt", "ended", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache()
			c.AddNode(node("a", 4000))
			p := memberPod("m", "g", 1000)
			pi, err := framework.NewPodInfo(p)
			if err != nil {
				t.Fatal(err)
			}
			tallies := map[string]*gangBinds{"ended": {}, "next": {}}
			for _, by := range []string{"ended", "next"} {
				if err := c.Assume(pi, "a", nil); err != nil {
					t.Fatal(err)
				}
				if !c.forget(p, tallies[by]) {
					t.Fatalf("%s: the assumption was not forgotten", by)
				}
			}
			if _, got := c.takeRetry(p, tallies[tc.by]); got != tc.want {
				t.Errorf("takeRetry by %s = %v, want %v", tc.by, got, tc.want)
			}
			if got := c.retryHeld(p, tallies["next"]); got != tc.wantAfter {
				t.Errorf("held for the next attempt = %v, want %v", got, tc.wantAfter)
			}
		})
	}
}

// TestHeldApartSaysWhyAMemberIsOutOfTheQueue: a group member leaves the
// queue as its group attempt's bindings start. Until it is bound, or
// given back to the queue after its binding failed, the cache says why
// (HeldApart, which the debug endpoint's Explain answers with), rather
// than the pod's looking unknown, bound, or not ours.
func TestHeldApartSaysWhyAMemberIsOutOfTheQueue(t *testing.T) {
	f, w := newGangFixture(t)
	nb := &namedBinder{done: map[string]func(error){}}
	f.s = mustNew(t, f.q, f.c, nb, warnReporter{f.r, w}, Options{})
	f.h.AddNode(node("a", 8000))
	f.h.AddPodGroup(podGroup("train", 2, 0))
	f.addGang("train", 2, 1000)
	f.once()
	steps := []struct {
		name   string
		do     func()
		member string
		want   string // "" : not held apart
	}{
		{"binding under way", func() {}, "train-1", "assumed on node a while its binding is under way"},
		{"binding failed, the other under way", func() { nb.done["train-1"](errors.New("etcd timeout")) }, "train-1", "its binding failed; it goes back to the queue with its group"},
		{"the other bound: the failed one is queued", func() { nb.done["train-0"](nil) }, "train-1", ""},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do()
			key := framework.Key(pod(st.member, 0))
			why, held := f.c.HeldApart(key)
			if held != (st.want != "") || !strings.Contains(why, st.want) {
				t.Fatalf("HeldApart = %q, %v; want %q", why, held, st.want)
			}
			if _, _, queued := f.q.Get(key); queued == held {
				t.Fatalf("queued %v and held apart %v: want one of the two", queued, held)
			}
		})
	}
}

// TestGangBindingEndedBelowMinCountIsLogged: a group attempt whose
// bindings end with the group below its minCount says so in the log,
// with or without members to give back: a member deleted while it was
// bound (404) is not retried, and the group then has no member queued to
// complete it.
func TestGangBindingEndedBelowMinCountIsLogged(t *testing.T) {
	gone := apierrors.NewNotFound(v1.Resource("pods"), "train-1")
	tests := []struct {
		name string
		err  error  // train-1's binding's end
		want string // "": no warning
	}{
		{"all bound", nil, ""},
		{"a member gone", gone, "group binding ended below minCount"},
		{"a member failed", errors.New("etcd timeout"), "members failed to bind and go back to the queue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, w := newGangFixture(t)
			var logs strings.Builder
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			nb := &namedBinder{done: map[string]func(error){}}
			f.s = mustNew(t, f.q, f.c, nb, warnReporter{f.r, w}, Options{Logger: log})
			f.h.AddNode(node("a", 8000))
			f.h.AddPodGroup(podGroup("train", 2, 0))
			f.addGang("train", 2, 1000)
			f.once()
			nb.done["train-1"](tc.err)
			nb.done["train-0"](nil)
			got := logs.String()
			if tc.want == "" {
				if got != "" {
					t.Fatalf("log %q, want none", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) || !strings.Contains(got, "bound=1 minCount=2") {
				t.Fatalf("log %q, want %q with bound=1 minCount=2", got, tc.want)
			}
		})
	}
}

// TestGangRetryRacesTheInformer: the informer's deletion of a member whose
// binding failed races the end of its group attempt's last binding, which
// gives the failed members back. Whichever comes first, the deleted member
// ends up in no queue: the give-back and the pod handlers are serialized
// by the pod events' lock. Run under -race.
func TestGangRetryRacesTheInformer(t *testing.T) {
	for i := range 50 {
		f, w := newGangFixture(t)
		nb := &namedBinder{done: map[string]func(error){}}
		f.s = mustNew(t, f.q, f.c, nb, warnReporter{f.r, w}, Options{})
		f.h.AddNode(node("a", 8000))
		f.h.AddPodGroup(podGroup("train", 2, 0))
		f.addGang("train", 2, 1000)
		f.once()
		nb.done["train-1"](errors.New("etcd timeout"))
		done := make(chan struct{})
		go func() {
			defer close(done)
			nb.done["train-0"](nil) // the last binding: gives train-1 back
		}()
		f.h.DeletePod(memberPod("train-1", "train", 1000))
		<-done
		if _, loc, queued := f.q.Get(framework.Key(pod("train-1", 0))); queued {
			t.Fatalf("run %d: the deleted member is queued (%v)", i, loc)
		}
	}
}
