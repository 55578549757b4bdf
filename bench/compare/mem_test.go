package main

import (
	"fmt"
	"testing"
)

// BenchmarkMemoryPerItem reports the bytes per queued pod of upstream and
// schedq (memory/queued item in the table), measured in alternation, so
// that -count and benchstat apply to it. Each b.N is one measurement per
// peer; the timing means nothing.
func BenchmarkMemoryPerItem(b *testing.B) {
	peers := []Peer{upstreamPeer(), schedqPeer()}
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			sum := make([]float64, len(peers))
			for b.Loop() {
				for i, p := range peers {
					sum[i] += p.BytesPerItem(n)
				}
			}
			for i, p := range peers {
				b.ReportMetric(sum[i]/float64(b.N), p.Name+"-B/item")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}
