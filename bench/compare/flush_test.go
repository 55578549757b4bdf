package main

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/bench/compare/internal/schedqdrv"
	"github.com/schedq/schedq/bench/compare/internal/upstream"
)

// timeouts is a schedq.Recorder that counts the items the leftover flush
// moves out of the parking area.
type timeouts struct{ n atomic.Int64 }

func (r *timeouts) Incoming(_ schedq.Location, event string) {
	if event == "UnschedulableTimeout" {
		r.n.Add(1)
	}
}
func (*timeouts) Left(schedq.Location, time.Duration)                {}
func (*timeouts) Scheduled(time.Duration, bool)                      {}
func (*timeouts) HintStart() int64                                   { return 0 }
func (*timeouts) HintDone(int64, string, string, schedq.Hint, error) {}
func (*timeouts) Moved(string, int, int)                             {}
func (*timeouts) IncomingGroup(schedq.Location, string, int)         {}
func (*timeouts) JoinedGroup(schedq.Location, string, int)           {}
func (*timeouts) Popped(string)                                      {}

// The schedq peer runs the leftover flush (a scan of every parked pod)
// where the streams' upstream peer runs it, once per leftoverEvery ops,
// and not at every clock step. A pod parked again after each flush, with
// a MaxInUnschedulable of 1 ns, is moved out by every leftover flush.
func TestSchedqFlushesLeftoverAsUpstreamPeer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cycles int
	}{
		{"one leftover step", 1},
		{"three leftover steps", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newRunClock()
			cfg := schedqConfig(clk)
			cfg.MaxInUnschedulable = time.Nanosecond
			rec := &timeouts{}
			cfg.Recorder = rec
			q, err := schedq.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			runQueue(t, q, clk)
			ops := schedqMixedOps(t, q, clk)
			pod := upstream.NewPod("parked", 0, nil)
			park := func() {
				q.Delete(schedqdrv.Key(pod))
				if err := q.Park(pod, schedq.Failure{RejectedBy: []string{upstream.PluginA}}); err != nil {
					t.Fatal(err)
				}
			}
			park()
			upstreamFlushes := 0
			// The clock steps of runMixed and runGroupMixed.
			for i := 1; i <= tc.cycles*leftoverEvery; i++ {
				if i%tickEvery == 0 {
					ops.tick(tickStep)
				}
				if i%leftoverEvery == 0 {
					ops.tick(leftoverStep)
					ops.leftover()
					upstreamFlushes++ // the upstream peer's leftover runs FlushLeftover
				}
				if q.Counts().Unschedulable == 0 {
					park()
				}
			}
			if got := rec.n.Load(); got != int64(upstreamFlushes) {
				t.Errorf("schedq's leftover flush ran %d times in %d ops, the upstream peer's %d", got, tc.cycles*leftoverEvery, upstreamFlushes)
			}
		})
	}
}

// TestMixedStream runs the mixed stream briefly on both peers: no
// operation is refused (each refusal stops the benchmark).
func TestMixedStream(t *testing.T) {
	for name, f := range map[string]func(int) func(*testing.B){"upstream": upstreamMixed, "schedq": schedqMixed} {
		res, ok := runBench(f(1000))
		if !ok {
			t.Fatalf("%s: the stream failed (testing.Benchmark drops the message: run BenchmarkMixed-like code under go test -bench to see it)", name)
		}
		t.Logf("%s: %d ops, %v/op", name, res.N, res.NsPerOp())
	}
}
