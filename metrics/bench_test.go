package metrics

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedq/schedq"
)

type benchItem struct {
	id   int
	prio int32
}

// BenchmarkAddPopDone is the library's Add+Pop+Done benchmark (n items
// waiting) with and without this recorder; the recorder's cost is the
// difference. Compare with: benchstat -col /metrics.
func BenchmarkAddPopDone(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		for _, withMetrics := range []bool{false, true} {
			b.Run(fmt.Sprintf("n=%d/metrics=%v", n, withMetrics), func(b *testing.B) {
				cfg := schedq.Config[int, benchItem]{
					Key:      func(it benchItem) int { return it.id },
					Priority: func(it benchItem) int32 { return it.prio },
				}
				var rec *Recorder
				if withMetrics {
					rec = New(Options{})
					cfg.Recorder = rec
				}
				c, err := schedq.NewCore(cfg)
				if err != nil {
					b.Fatal(err)
				}
				if rec != nil {
					if err := rec.Register(prometheus.NewRegistry(), c); err != nil {
						b.Fatal(err)
					}
				}
				r := rand.New(rand.NewPCG(1, 1))
				now := t0
				for i := range n {
					c.Add(benchItem{id: i, prio: int32(r.IntN(100))}, now)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					now = now.Add(time.Microsecond)
					info, _ := c.Pop(now)
					c.Done(info, now)
					c.Add(benchItem{id: info.Item.id, prio: int32(r.IntN(100))}, now)
				}
			})
		}
	}
}
