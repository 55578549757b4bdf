package main

import (
	"fmt"
	"testing"
)

// BenchmarkFailRequeue runs the fail+requeue(backoff) scenario of the
// table (pop the head, fail it with an error; every n ops the clock steps
// past the backoff and the flush brings all back) on upstream and on
// schedq, so that go test's -cpuprofile, -count and benchstat apply to it.
func BenchmarkFailRequeue(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("upstream/%d", n), upstreamFailRequeue(n))
		b.Run(fmt.Sprintf("schedq/%d", n), schedqFailRequeue(n))
	}
}
