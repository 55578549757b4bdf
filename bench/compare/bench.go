package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/schedq/schedq/bench/compare/internal/stream"
	"github.com/schedq/schedq/kube/sim"
)

// Peer is one queue implementation under comparison. A nil field means the
// peer has no equivalent of that scenario; the table prints "n/a".
//
// Every benchmark function builds its own queue (setup is excluded with
// b.ResetTimer / b.StopTimer) and performs b.N operations as defined per
// scenario below.
type Peer struct {
	Name string

	// AddPopDone: n items are already waiting; one op = add one new item,
	// pop the head, mark it done. The queue stays at n items.
	AddPopDone func(n int) func(b *testing.B)

	// FailRequeue: n ready items; one op = pop the head and hand it back as
	// failed so it goes through the peer's backoff path. Items must come back
	// eventually (the cost of bringing them back is part of the op).
	FailRequeue func(n int) func(b *testing.B)

	// MoveAll: n items parked as unschedulable; one op = deliver one cluster
	// event. move=false: every hint answers Skip (nothing moves). move=true:
	// every hint answers Queue (all n move; re-parking is untimed).
	MoveAll func(n int, move bool) func(b *testing.B)

	// Stream replays the queue operations the simulator made in its
	// NodeArrival scenario, with its virtual clock; one op = one replay.
	Stream func(ops []sim.Op) func(b *testing.B)

	// Mixed: the realistic stream of runMixed (mixed.go) with n pods
	// waiting at the start.
	Mixed func(n int) func(b *testing.B)

	// Groups: the stream of runGroupMixed (groups.go): lone pods and gangs
	// of 8, n entities waiting throughout; one op = add one entity and
	// make one attempt.
	Groups func(n int) func(b *testing.B)

	// BytesPerItem: retained heap growth per queued item with n items
	// waiting (caller-owned item payloads allocated before measuring).
	BytesPerItem func(n int) float64
}

type row struct {
	scenario, peer, note string
	n                    int
	res                  *testing.BenchmarkResult
	bytesPerItem         float64
	na                   bool
	// failed says why the row has no figure: its benchmark failed (or
	// skipped), or its input could not be made.
	failed string
}

// The scenarios, as the table names them and -only matches them.
const (
	scenAddPopDone  = "add+pop+done"
	scenFailRequeue = "fail+requeue(backoff)"
	scenMoveSkip    = "moveall(skip all)"
	scenMoveAll     = "moveall(all move)"
	scenMixed       = "mixed stream"
	scenGroups      = "pods+groups stream"
	scenNodeArrival = "NodeArrival stream"
	scenMemory      = "memory/queued item"
)

var scenarios = []string{scenAddPopDone, scenFailRequeue, scenMoveSkip, scenMoveAll, scenMixed, scenGroups, scenNodeArrival, scenMemory}

// selects says whether -only picks scenario: a case-insensitive part of
// its name ("" picks all).
func selects(only, scenario string) bool {
	return only == "" || strings.Contains(strings.ToLower(scenario), strings.ToLower(only))
}

// checkFlags refuses an -only that picks no scenario and arguments that
// are not flags, so that a typo does not print an empty table.
func checkFlags(only string, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q: every setting is a flag (-quick, -only, -benchtime)", args[0])
	}
	if !slices.ContainsFunc(scenarios, func(s string) bool { return selects(only, s) }) {
		return fmt.Errorf("-only %q: no scenario's name contains it (scenarios: %s)", only, strings.Join(scenarios, ", "))
	}
	return nil
}

// recordStream records the simulator's stream for the NodeArrival rows
// (a variable for the tests).
var recordStream = stream.Record

// runBench runs f with testing.Benchmark and says whether it ran: a
// benchmark that fails or skips gets a zero result, and testing.Benchmark
// drops its message.
func runBench(f func(*testing.B)) (testing.BenchmarkResult, bool) {
	failed := false
	res := testing.Benchmark(func(b *testing.B) {
		defer func() {
			if b.Failed() || b.Skipped() {
				failed = true
			}
		}()
		f(b)
	})
	return res, !failed && res.N > 0
}

// failures counts the rows whose benchmark failed.
func failures(rows []row) int {
	n := 0
	for _, r := range rows {
		if r.failed != "" {
			n++
		}
	}
	return n
}

// priorities returns a deterministic pseudo-random priority per item.
func priorities(n int) []int32 {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(100))
	}
	return out
}

// heapBytes returns live heap bytes after a full GC.
func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func runAll(peers []Peer, sizes, moveSizes []int, only string, progress io.Writer) []row {
	var rows []row
	want := func(s string) bool { return selects(only, s) }
	bench := func(scenario string, n int, p Peer, f func(b *testing.B), note string) {
		if !want(scenario) {
			return
		}
		r := row{scenario: scenario, peer: p.Name, n: n, note: note}
		if f == nil {
			r.na = true
		} else {
			fmt.Fprintf(progress, "running %s n=%d %s ...\n", scenario, n, p.Name)
			res, ok := runBench(f)
			r.res = &res
			if !ok {
				r.failed = "failed or skipped (testing.Benchmark drops the message)"
				fmt.Fprintf(progress, "  %s\n", r.failed)
			}
		}
		rows = append(rows, r)
	}
	for _, n := range sizes {
		for _, p := range peers {
			var f func(*testing.B)
			if p.AddPopDone != nil {
				f = p.AddPopDone(n)
			}
			bench(scenAddPopDone, n, p, f, "")
		}
	}
	for _, n := range sizes {
		for _, p := range peers {
			var f func(*testing.B)
			if p.FailRequeue != nil {
				f = p.FailRequeue(n)
			}
			bench(scenFailRequeue, n, p, f, failNotes[p.Name])
		}
	}
	for _, move := range []bool{false, true} {
		scen := scenMoveSkip
		if move {
			scen = scenMoveAll
		}
		for _, n := range moveSizes {
			for _, p := range peers {
				var f func(*testing.B)
				if p.MoveAll != nil {
					f = p.MoveAll(n, move)
				}
				bench(scen, n, p, f, "")
			}
		}
	}
	for _, n := range moveSizes {
		for _, p := range peers {
			var f func(*testing.B)
			if p.Mixed != nil {
				f = p.Mixed(n)
			}
			bench(scenMixed, n, p, f, "")
		}
	}
	for _, n := range moveSizes {
		for _, p := range peers {
			var f func(*testing.B)
			if p.Groups != nil {
				f = p.Groups(n)
			}
			bench(scenGroups, n, p, f, "a quarter of the entities are gangs of 8")
		}
	}
	if want(scenNodeArrival) {
		ops, err := recordStream("NodeArrival")
		if err != nil {
			fmt.Fprintln(progress, "recording NodeArrival:", err)
			for _, p := range peers {
				rows = append(rows, row{scenario: scenNodeArrival, peer: p.Name, failed: "recording the simulator's NodeArrival run: " + err.Error()})
			}
		} else {
			for _, p := range peers {
				var f func(*testing.B)
				if p.Stream != nil {
					f = p.Stream(ops)
				}
				bench(scenNodeArrival, len(ops), p, f, "one op = replaying all N queue operations of the simulator's NodeArrival run")
			}
		}
	}
	if want(scenMemory) {
		for _, n := range sizes {
			fmt.Fprintf(progress, "measuring memory n=%d, %d rounds ...\n", n, memRounds)
			rows = append(rows, memoryRows(peers, n, memRounds)...)
		}
	}
	return rows
}

// memRounds is how many times memoryRows measures each peer.
const memRounds = 7

// memoryRows measures each peer's bytes per queued item rounds times, the
// peers taking turns within each round, so that whatever drifts in the
// process (the runtime's own caches, a peer's background goroutines)
// falls on all alike. A row reports the median, and its note the range.
func memoryRows(peers []Peer, n, rounds int) []row {
	got := make([][]float64, len(peers))
	for range rounds {
		for i, p := range peers {
			if p.BytesPerItem != nil {
				got[i] = append(got[i], p.BytesPerItem(n))
			}
		}
	}
	var rows []row
	for i, p := range peers {
		r := row{scenario: scenMemory, peer: p.Name, n: n, na: p.BytesPerItem == nil}
		if !r.na {
			v := slices.Sorted(slices.Values(got[i]))
			r.bytesPerItem = v[len(v)/2]
			r.note = fmt.Sprintf("median of %d alternated rounds; range %.0f-%.0f", rounds, v[0], v[len(v)-1])
		}
		rows = append(rows, r)
	}
	return rows
}

var failNotes = map[string]string{
	"upstream":   "error backoff; fake clock stepped + flushBackoffQCompleted every n ops",
	"workqueue":  "AddRateLimited, exp. limiter 5ms..1000s; fake clock stepped every n ops",
	"ctrl-rt-pq": "AddRateLimited with a constant 1ns limiter (no injectable clock)",
}

// printTable prints one row per scenario, size and peer. The last column
// compares schedq with that peer: how many times faster schedq is (peer
// ns/op over schedq ns/op), or how many times smaller per item.
func printTable(w io.Writer, rows []row) {
	type at struct {
		scenario string
		n        int
	}
	ours := map[at]row{}
	for _, r := range rows {
		if r.peer == "schedq" && !r.na && r.failed == "" {
			ours[at{r.scenario, r.n}] = r
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tN\tpeer\tns/op\tB/op\tallocs/op\tB/item\tschedq vs peer\tnote\t")
	for _, r := range rows {
		ns, b, a, bi, ratio := "n/a", "n/a", "n/a", "-", "-"
		s, have := ours[at{r.scenario, r.n}]
		note := r.note
		switch {
		case r.failed != "":
			ns, b, a, note = "failed", "-", "-", r.failed
		case r.na:
			if r.scenario == scenMemory {
				ns, b, a, bi = "-", "-", "-", "n/a"
			}
			ratio = "n/a"
		case r.res != nil:
			ns = fmt.Sprintf("%d", r.res.NsPerOp())
			b = fmt.Sprintf("%d", r.res.AllocedBytesPerOp())
			a = fmt.Sprintf("%d", r.res.AllocsPerOp())
			if have && r.peer != "schedq" && s.res != nil && nsPerOp(*s.res) > 0 && nsPerOp(*r.res) > 0 {
				ratio = speed(nsPerOp(*r.res) / nsPerOp(*s.res))
			}
		default:
			ns, b, a = "-", "-", "-"
			bi = fmt.Sprintf("%.0f", r.bytesPerItem)
			if have && r.peer != "schedq" && s.bytesPerItem > 0 && r.bytesPerItem > 0 {
				ratio = fmt.Sprintf("%.2fx the bytes", s.bytesPerItem/r.bytesPerItem)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.scenario, r.n, r.peer, ns, b, a, bi, ratio, note)
	}
	tw.Flush()
}

// nsPerOp is r's time per op, unrounded (NsPerOp rounds down to whole
// nanoseconds), 0 if r has no op.
func nsPerOp(r testing.BenchmarkResult) float64 {
	if r.N <= 0 {
		return 0
	}
	return float64(r.T.Nanoseconds()) / float64(r.N)
}

// speed words a ratio of peer time to schedq time.
func speed(x float64) string {
	if x >= 1 {
		return fmt.Sprintf("%.1fx faster", x)
	}
	return fmt.Sprintf("%.1fx slower", 1/x)
}
