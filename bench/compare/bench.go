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
	want := func(s string) bool { return only == "" || strings.Contains(strings.ToLower(s), strings.ToLower(only)) }
	bench := func(scenario string, n int, p Peer, f func(b *testing.B), note string) {
		if !want(scenario) {
			return
		}
		r := row{scenario: scenario, peer: p.Name, n: n, note: note}
		if f == nil {
			r.na = true
		} else {
			fmt.Fprintf(progress, "running %s n=%d %s ...\n", scenario, n, p.Name)
			res := testing.Benchmark(f)
			r.res = &res
		}
		rows = append(rows, r)
	}
	for _, n := range sizes {
		for _, p := range peers {
			var f func(*testing.B)
			if p.AddPopDone != nil {
				f = p.AddPopDone(n)
			}
			bench("add+pop+done", n, p, f, "")
		}
	}
	for _, n := range sizes {
		for _, p := range peers {
			var f func(*testing.B)
			if p.FailRequeue != nil {
				f = p.FailRequeue(n)
			}
			bench("fail+requeue(backoff)", n, p, f, failNotes[p.Name])
		}
	}
	for _, move := range []bool{false, true} {
		scen := "moveall(skip all)"
		if move {
			scen = "moveall(all move)"
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
			bench("mixed stream", n, p, f, "")
		}
	}
	for _, n := range moveSizes {
		for _, p := range peers {
			var f func(*testing.B)
			if p.Groups != nil {
				f = p.Groups(n)
			}
			bench("pods+groups stream", n, p, f, "a quarter of the entities are gangs of 8")
		}
	}
	if want("nodearrival") {
		ops, err := stream.Record("NodeArrival")
		if err != nil {
			fmt.Fprintln(progress, "recording NodeArrival:", err)
		} else {
			for _, p := range peers {
				var f func(*testing.B)
				if p.Stream != nil {
					f = p.Stream(ops)
				}
				bench("NodeArrival stream", len(ops), p, f, "one op = replaying all N queue operations of the simulator's NodeArrival run")
			}
		}
	}
	if want("memory") {
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
		r := row{scenario: "memory/queued item", peer: p.Name, n: n, na: p.BytesPerItem == nil}
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
		if r.peer == "schedq" && !r.na {
			ours[at{r.scenario, r.n}] = r
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tN\tpeer\tns/op\tB/op\tallocs/op\tB/item\tschedq vs peer\tnote\t")
	for _, r := range rows {
		ns, b, a, bi, ratio := "n/a", "n/a", "n/a", "-", "-"
		s, have := ours[at{r.scenario, r.n}]
		switch {
		case r.na:
			if r.scenario == "memory/queued item" {
				ns, b, a, bi = "-", "-", "-", "n/a"
			}
			ratio = "n/a"
		case r.res != nil:
			ns = fmt.Sprintf("%d", r.res.NsPerOp())
			b = fmt.Sprintf("%d", r.res.AllocedBytesPerOp())
			a = fmt.Sprintf("%d", r.res.AllocsPerOp())
			if have && r.peer != "schedq" && s.res != nil && s.res.NsPerOp() > 0 {
				ratio = speed(float64(r.res.NsPerOp()) / float64(s.res.NsPerOp()))
			}
		default:
			ns, b, a = "-", "-", "-"
			bi = fmt.Sprintf("%.0f", r.bytesPerItem)
			if have && r.peer != "schedq" && s.bytesPerItem > 0 {
				ratio = fmt.Sprintf("%.2fx the bytes", s.bytesPerItem/r.bytesPerItem)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.scenario, r.n, r.peer, ns, b, a, bi, ratio, r.note)
	}
	tw.Flush()
}

// speed words a ratio of peer time to schedq time.
func speed(x float64) string {
	if x >= 1 {
		return fmt.Sprintf("%.1fx faster", x)
	}
	return fmt.Sprintf("%.1fx slower", 1/x)
}
