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
	if err := flag.Set("test.benchtime", *benchtime); err != nil {
		fmt.Fprintln(os.Stderr, err)
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
}
