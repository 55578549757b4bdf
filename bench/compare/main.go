// Command compare benchmarks the kube-scheduler scheduling queue (upstream),
// client-go's rate-limiting workqueue, controller-runtime's priority queue and
// (once plugged in, see schedq.go) schedq, and prints one table.
//
//	go run . [-quick] [-only substring] [-benchtime 1s]
package main

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

func main() {
	testing.Init()
	quick := flag.Bool("quick", false, "sizes 1k,10k only and 10k for MoveAll")
	only := flag.String("only", "", "run only scenarios whose name contains this")
	benchtime := flag.String("benchtime", "1s", "per-benchmark target time (testing -benchtime syntax)")
	flag.Parse()
	if err := checkFlags(*only, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(2)
	}
	if err := flag.Set("test.benchtime", *benchtime); err != nil {
		fmt.Fprintf(os.Stderr, "compare: -benchtime %q: want a duration (1s) or a count (100x)\n", *benchtime)
		os.Exit(2)
	}

	sizes := []int{1_000, 10_000, 100_000}
	moveSizes := []int{1_000, 10_000, 100_000}
	if *quick {
		sizes = []int{1_000, 10_000}
		moveSizes = []int{10_000}
	}
	peers := []Peer{upstreamPeer(), workqueuePeer(), crPeer(), schedqPeer()}
	rows := runAll(peers, sizes, moveSizes, *only, os.Stderr)
	printTable(os.Stdout, rows)
	if n := failures(rows); n > 0 {
		fmt.Fprintf(os.Stderr, "compare: %d of the table's rows failed (see the note column)\n", n)
		os.Exit(1)
	}
}
