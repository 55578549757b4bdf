package stream

import "testing"

// TestReplayNodeArrival replays the simulator's NodeArrival stream on both
// queues: every pop the simulator made finds a pod on each.
func TestReplayNodeArrival(t *testing.T) {
	ops, err := Record("NodeArrival")
	if err != nil {
		t.Fatal(err)
	}
	pops := 0
	for _, op := range ops {
		if op.Kind == "pop" {
			pops++
		}
	}
	if pops < 1000 {
		t.Fatalf("only %d pops recorded", pops)
	}
	s, err := NewSchedq()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Replay(ops); err != nil {
		t.Fatalf("schedq: %v", err)
	}
	u, err := NewUpstream()
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if err := u.Replay(ops, true); err != nil {
		t.Fatalf("upstream: %v", err)
	}
	t.Logf("%d operations, %d pops replayed on both", len(ops), pops)
}
