package scheduler

import (
	"errors"
	"fmt"
	"github.com/google/go-cmp/cmp"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backendcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/schedq/schedq/kube/framework"
)

// rollbackBase is a marked cache as a forward run finds it, with
// something of every kind: bound pods and group members, a namespace,
// the pod group "default/g" scaled up, a pod seen being deleted, and,
// unlike a forecast's base, an assumption, a binding in doubt and a
// member held to retry (the cache's Mark promises them back too).
type rollbackBase struct {
	c                      *Cache
	bound, member, assumed *v1.Pod
	doubt, held, gonePod   *v1.Pod
	heldBy                 *gangBinds
	n1                     *v1.Node
}

func groupPod(name string, milliCPU int64, group string) *v1.Pod {
	p := pod(name, milliCPU)
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

func newRollbackBase(t *testing.T) *rollbackBase {
	t.Helper()
	b := &rollbackBase{c: NewCache(), n1: node("n1", 8000), heldBy: &gangBinds{}}
	c := b.c
	c.TrackUpstream()
	c.SetNamespace(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"team": "a"}}})
	c.AddNode(b.n1)
	c.AddNode(node("n2", 8000))
	b.bound = pod("bound", 1000)
	b.bound.Spec.NodeName = "n1"
	b.member = groupPod("member", 1000, "g")
	b.member.Spec.NodeName = "n2"
	for _, p := range []*v1.Pod{b.bound, b.member} {
		if err := c.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	c.noteMinCount("default/g", 1, 3)
	b.gonePod = pod("gone", 100)
	c.buryDeleting(b.gonePod)
	b.assumed, b.doubt, b.held = pod("assumed", 500), pod("doubt", 500), groupPod("held", 500, "g")
	for _, p := range []*v1.Pod{b.assumed, b.doubt, b.held} {
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Assume(pi, "n1", &pendingBinding{}); err != nil {
			t.Fatal(err)
		}
	}
	if !c.keepInDoubt(b.doubt) || !c.forget(b.held, b.heldBy) {
		t.Fatal("the base's binding in doubt or held member")
	}
	c.up.record(errors.New("a write before the mark")) // UpdateSnapshot's to report
	c.Mark()
	return b
}

// TestCacheRollbackRestoresEveryField: whatever a forward run writes of
// the cache, a rollback brings back every field of it exactly as marked
// (StateDump, which names the objects by address), or refuses. A field
// left out would carry a run's write into the next run from the mark.
func TestCacheRollbackRestoresEveryField(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, b *rollbackBase)
		// refused: the rollback must fail (and the cache is then built
		// again by its user); else it must bring the marked dump back.
		refused bool
	}{
		{name: "binds, assumptions and removals", run: func(t *testing.T, b *rollbackBase) {
			c := b.c
			p := pod("new", 700)
			pi, _ := framework.NewPodInfo(p)
			if err := c.Assume(pi, "n2", nil); err != nil {
				t.Fatal(err)
			}
			bound := *p
			bound.Spec.NodeName = "n2"
			bound.ResourceVersion = "2"
			_ = c.AddPod(&bound)
			c.RemovePod(framework.Key(b.bound))
			c.Forget(b.assumed)
			confirmed := *b.member
			confirmed.ResourceVersion = "9"
			_ = c.AddPod(&confirmed)
		}},
		{name: "group trials kept and undone", run: func(t *testing.T, b *rollbackBase) {
			for _, keep := range []bool{true, false} {
				b.c.Trial(func(_ framework.Snapshot, tr *Trial) bool {
					p := groupPod("trial-"+map[bool]string{true: "kept", false: "undone"}[keep], 300, "g")
					pi, _ := framework.NewPodInfo(p)
					if !tr.Place(pi, "n2", nil) {
						t.Fatal("trial placement refused")
					}
					return keep
				})
			}
		}},
		{name: "deletions seen", run: func(t *testing.T, b *rollbackBase) {
			b.c.buryDeleting(b.bound)
			b.c.buryMember(b.member)
		}},
		{name: "minCount raised", run: func(t *testing.T, b *rollbackBase) {
			b.c.noteMinCount("default/h", 0, 2)
			p := groupPod("h1", 100, "h")
			p.Spec.NodeName = "n2"
			_ = b.c.AddPod(p)
			b.c.noteMinCount("default/h", 1, 4)
		}},
		{name: "PodGroup deleted", run: func(t *testing.T, b *rollbackBase) {
			b.c.forgetMinCount("default/g")
		}},
		{name: "gang release enabled", run: func(t *testing.T, b *rollbackBase) {
			b.c.release.Store(&gangRelease{below: map[string]time.Time{}})
		}},
		{name: "binding in doubt", run: func(t *testing.T, b *rollbackBase) {
			if !b.c.keepInDoubt(b.assumed) {
				t.Fatal("not kept in doubt")
			}
		}},
		{name: "doubt settled", run: func(t *testing.T, b *rollbackBase) {
			if !b.c.settleInDoubt(b.doubt, nil, false) {
				t.Fatal("not settled")
			}
		}},
		{name: "held member given back", run: func(t *testing.T, b *rollbackBase) {
			if _, ok := b.c.takeRetry(b.held, b.heldBy); !ok {
				t.Fatal("not held")
			}
		}},
		{name: "held member dropped", run: func(t *testing.T, b *rollbackBase) {
			b.c.unretry(b.held)
		}},
		{name: "held member's newer version seen", run: func(t *testing.T, b *rollbackBase) {
			newer := *b.held
			newer.ResourceVersion = "7"
			if _, held := b.c.seenPending(&newer); !held {
				t.Fatal("not held")
			}
		}},
		{name: "node removed", refused: true, run: func(t *testing.T, b *rollbackBase) {
			b.c.RemoveNode("n2")
		}},
		{name: "node removed and added back, the same object", refused: true, run: func(t *testing.T, b *rollbackBase) {
			b.c.RemoveNode("n1")
			b.c.AddNode(b.n1)
		}},
		{name: "a write kube-scheduler's cache refused", refused: true, run: func(t *testing.T, b *rollbackBase) {
			_, _ = b.c.UpdateSnapshot(backendcache.NewEmptySnapshot()) // takes the marked error
			b.c.up.record(errors.New("refused"))
		}},
		{name: "the marked error of kube-scheduler's cache taken", run: func(t *testing.T, b *rollbackBase) {
			if _, err := b.c.UpdateSnapshot(backendcache.NewEmptySnapshot()); err == nil {
				t.Fatal("no marked error to take")
			}
		}},
		{name: "pod on an unknown node", refused: true, run: func(t *testing.T, b *rollbackBase) {
			p := pod("stray", 100)
			p.Spec.NodeName = "n9"
			_ = b.c.AddPod(p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newRollbackBase(t)
			want := b.c.StateDump()
			for round := range 2 {
				tc.run(t, b)
				err := b.c.Rollback()
				if tc.refused {
					if err == nil {
						t.Errorf("round %d: the rollback did not refuse", round)
					}
					return
				}
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if got := b.c.StateDump(); got != want {
					t.Errorf("round %d: the cache after the rollback differs from the mark:\n%s", round, dumpDiff(want, got))
				}
			}
		})
	}
}

// dumpDiff lists the lines of two dumps that differ, as -want/+got.
func dumpDiff(want, got string) string {
	return cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n"))
}

// TestCacheRollbackRandomWrites: random sequences of every write a
// forward run makes of the cache, interleaved on the same pods (a pod
// assumed, confirmed, deleted, created again under its name, held to
// retry, seen deleted...), each rolled back, bring the marked cache back
// exactly (StateDump), round after round.
func TestCacheRollbackRandomWrites(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			b := newRollbackBase(t)
			c := b.c
			want := c.StateDump()
			rng := rand.New(rand.NewPCG(seed, 7))
			names := []string{"a", "b", "bound", "member", "assumed", "doubt", "held"}
			nodes := []string{"n1", "n2"}
			gen := 0
			// made returns a pod of a random name, a group member or not,
			// of a new UID now and then (created again).
			made := func() *v1.Pod {
				name := names[rng.IntN(len(names))]
				var p *v1.Pod
				if rng.IntN(2) == 0 {
					p = groupPod(name, int64(100*(1+rng.IntN(5))), "g")
				} else {
					p = pod(name, int64(100*(1+rng.IntN(5))))
				}
				if rng.IntN(3) == 0 {
					gen++
					p.UID = types.UID(fmt.Sprintf("uid-%s-%d", name, gen))
				}
				return p
			}
			for round := range 3 {
				for range 40 {
					p := made()
					key := framework.Key(p)
					switch rng.IntN(14) {
					case 0:
						pi, _ := framework.NewPodInfo(p)
						_ = c.Assume(pi, nodes[rng.IntN(2)], &pendingBinding{})
					case 1:
						n, ok := c.NodeOf(key)
						if !ok {
							n = nodes[rng.IntN(2)]
						}
						p.Spec.NodeName = n
						_ = c.AddPod(p)
					case 2:
						c.RemovePod(key)
					case 3:
						c.Forget(p)
					case 4:
						keep := rng.IntN(2) == 0
						c.Trial(func(_ framework.Snapshot, tr *Trial) bool {
							pi, _ := framework.NewPodInfo(p)
							tr.Place(pi, nodes[rng.IntN(2)], nil)
							return keep
						})
					case 5:
						c.buryDeleting(p)
					case 6:
						c.buryMember(p)
					case 7:
						c.noteMinCount("default/g", rng.IntN(3), rng.IntN(5))
					case 8:
						c.forgetMinCount("default/g")
					case 9:
						c.keepInDoubt(p)
					case 10:
						c.settleInDoubt(p, nil, rng.IntN(2) == 0)
					case 11:
						c.forget(p, b.heldBy)
					case 12:
						switch rng.IntN(3) {
						case 0:
							c.takeRetry(p, b.heldBy)
						case 1:
							c.unretry(p)
						default:
							c.seenPending(p)
						}
					case 13:
						c.release.Store(&gangRelease{})
					}
				}
				if err := c.Rollback(); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if got := c.StateDump(); got != want {
					t.Fatalf("round %d: the cache after the rollback differs from the mark:\n%s", round, dumpDiff(want, got))
				}
			}
		})
	}
}
