package main

import "testing"

// TestGroupStream runs the pods-and-groups stream briefly on both peers:
// every pop finds an entity the stream knows, and no outcome is refused
// (each failure stops the benchmark with its error).
func TestGroupStream(t *testing.T) {
	for name, f := range map[string]func(int) func(*testing.B){
		"upstream": upstreamGroups, "schedq": withClasses, "schedq-noclass": func(n int) func(*testing.B) { return schedqGroups(n, false) },
	} {
		res := testing.Benchmark(f(1000))
		if res.N == 0 {
			t.Fatalf("%s: the stream failed (testing.Benchmark drops the message: go test -run '^$' -bench 'BenchmarkGroups/%s$' -benchtime 1000x shows it)", name, name)
		}
		t.Logf("%s: %d ops, %v/op, %d allocs/op", name, res.N, res.NsPerOp(), res.AllocsPerOp())
	}
}
