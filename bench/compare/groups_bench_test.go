package main

import "testing"

// BenchmarkGroups runs the pods-and-groups stream with 10,000 entities
// queued on each peer; -benchtime 60000x measures the steady state (most
// entities parked gangs), 2000x the start. schedq-noclass runs schedq
// without Config.HintClass, so that every hint runs for every parked pod
// and member, as upstream's do.
func BenchmarkGroups(b *testing.B) {
	b.Run("upstream", upstreamGroups(10000))
	b.Run("schedq", schedqGroups(10000, true))
	b.Run("schedq-noclass", schedqGroups(10000, false))
}
