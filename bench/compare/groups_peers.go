package main

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/bench/compare/internal/schedqdrv"
	"github.com/schedq/schedq/bench/compare/internal/upstream"
	"github.com/schedq/schedq/kube/clusterevent"
)

// upstreamGroups runs the pods-and-groups stream on the v1.37.2 queue,
// built with the GenericWorkload gate on (restored afterwards).
func upstreamGroups(n int) func(b *testing.B) {
	return func(b *testing.B) {
		restore, err := upstream.SetGroups(true)
		if err != nil {
			b.Fatal(err)
		}
		defer restore()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		q, clk := upstream.NewBenchQueue(ctx, upstream.Options{})
		defer q.Close()
		logger := klog.FromContext(ctx)
		var cur upstream.Popped
		runGroupMixed(b, n, groupOps{
			addGroup: func(pg *schedulingv1beta1.PodGroup, members []*v1.Pod, first bool) {
				if first {
					q.AddPodGroup(logger, pg)
				}
				for _, m := range members {
					q.Add(ctx, m)
				}
			},
			add: func(p *v1.Pod) { q.Add(ctx, p) },
			del: func(p *v1.Pod) { q.Delete(logger, p) },
			pop: func() string {
				p, err := upstream.PopEntity(q, logger)
				if err != nil {
					b.Fatal(err)
				}
				cur = p
				if p.Group != nil {
					return p.Group.GetName()
				}
				return p.Pod.Pod.Name
			},
			fail: func(plugins []string) {
				if err := upstream.Reject(q, logger, cur, plugins); err != nil {
					b.Fatal(err)
				}
			},
			done: func() {
				if err := upstream.Succeed(q, logger, cur); err != nil {
					b.Fatal(err)
				}
			},
			event: func(oldObj, newObj any) {
				ev, _, _ := upstream.EventArgs(upstream.NodeAdd, upstream.HintByLabel)
				q.MoveAllToActiveOrBackoffQueue(logger, ev, oldObj, newObj, nil)
			},
			tick: func(d time.Duration) {
				clk.Step(d)
				upstream.FlushBackoffQ(q, logger)
			},
			leftover: func() { upstream.FlushLeftover(q, logger) },
		})
	}
}

// podGroupName is the group a pod names, "" for none.
func podGroupName(p *v1.Pod) string {
	if g := p.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName
	}
	return ""
}

// withClasses is schedqGroups with the driver's Config.HintClass.
func withClasses(n int) func(b *testing.B) { return schedqGroups(n, true) }

// schedqGroups runs the pods-and-groups stream on schedq's locked Queue
// with groups named by the pods' PodGroup.
func schedqGroups(n int, classes bool) func(b *testing.B) {
	return func(b *testing.B) {
		clk := newRunClock()
		cfg := schedqConfig(clk)
		if !classes {
			cfg.HintClass = nil // every hint asked for every item, as upstream
		}
		cfg.Group = podGroupName
		q, err := schedq.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		runQueue(b, q, clk)
		ctx := context.Background()
		var cur schedq.Attempt[types.NamespacedName, *v1.Pod]
		runGroupMixed(b, n, groupOps{
			addGroup: func(pg *schedulingv1beta1.PodGroup, members []*v1.Pod, first bool) {
				if first {
					spec := schedq.GroupSpec{MinCount: int(pg.Spec.SchedulingPolicy.Gang.MinCount), Priority: *pg.Spec.Priority}
					if err := q.SetGroup(pg.Name, spec); err != nil {
						b.Fatal(err)
					}
				}
				for _, m := range members {
					q.Add(m)
				}
			},
			add: func(p *v1.Pod) { q.Add(p) },
			del: func(p *v1.Pod) { q.Delete(schedqdrv.Key(p)) },
			pop: func() string {
				a, err := q.Pop(ctx)
				if err != nil {
					b.Fatal(err)
				}
				cur = a
				if a.Group != "" {
					return a.Group
				}
				return a.Item.Name
			},
			fail: func(plugins []string) {
				if err := q.Requeue(cur, schedq.Failure{RejectedBy: plugins}); err != nil {
					b.Fatal(err)
				}
			},
			done: func() {
				if err := q.Done(cur); err != nil {
					b.Fatal(err)
				}
			},
			event: func(oldObj, newObj any) {
				q.Move(clusterevent.NodeAdd, oldObj, newObj, nil)
			},
			tick: func(d time.Duration) { clk.Step(d) }, // Run flushes
			// Run ran the leftover flush in the step before (schedqConfig).
			leftover: func() {},
		})
	}
}
