package scheduler

import (
	"context"
	"fmt"
	"testing"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// BenchmarkGroupCycle is one group attempt of a gang of 8 on 100 nodes
// (trial, assumptions, bindings at once), and, for comparison, 8 attempts
// of lone pods. Each iteration binds its pods and the next one forgets
// them, so the cluster stays the same size.
func BenchmarkGroupCycle(b *testing.B) {
	for _, gang := range []bool{true, false} {
		name := "lone-x8"
		if gang {
			name = "gang-of-8"
		}
		b.Run(name, func(b *testing.B) {
			q, err := schedq.New(QueueConfig(gangProfile()))
			if err != nil {
				b.Fatal(err)
			}
			c := NewCache()
			h := &Handlers{Queue: q, Cache: c, SchedulerName: "schedq"}
			s := New(q, c, &syncBinder{}, &recReporter{}, Options{Profile: gangProfile()})
			for i := range 100 {
				h.AddNode(node(fmt.Sprint("n", i), 8000))
			}
			if gang {
				h.AddPodGroup(podGroup("g", 8, 0))
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				var keys []*framework.PodInfo
				for j := range 8 {
					p := pod(fmt.Sprintf("p%d-%d", i, j), 100)
					if gang {
						p = memberPod(p.Name, "g", 100)
					}
					pi, _ := framework.NewPodInfo(p)
					keys = append(keys, pi)
					h.AddPod(p)
				}
				for range map[bool]int{true: 1, false: 8}[gang] {
					a, err := q.Pop(ended)
					if err != nil {
						b.Fatal(err)
					}
					s.ScheduleOne(ctx, a)
				}
				for _, pi := range keys {
					c.RemovePod(framework.Key(pi.Pod))
				}
			}
		})
	}
}
