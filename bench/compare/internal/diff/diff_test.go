package diff

import (
	"flag"
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"

	"github.com/schedq/schedq/bench/compare/internal/schedqdrv"
)

func TestMain(m *testing.M) {
	// Upstream logs every hint error; the fake plugins return many.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	fs.Set("logtostderr", "false")
	fs.Set("alsologtostderr", "false")
	fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}

func checkInvariants(d *schedqdrv.Driver) error { return d.Violation() }

// TestDifferential replays seeded random sequences on the upstream queue
// and on schedq, comparing every pod's place after every step and every
// Pop's result.
func TestDifferential(t *testing.T) {
	runs, steps := 400, 400
	if testing.Short() {
		runs = 40
	}
	total := 0
	for seed := range uint64(runs) {
		res := Run(seed, steps, checkInvariants)
		total += res.Steps
		if res.Mismatch != "" {
			t.Fatalf("seed %d: %s", seed, res.Mismatch)
		}
	}
	t.Logf("%d runs, %d steps, no difference", runs, total)
}

// FuzzDifferential lets the fuzzer pick seeds.
func FuzzDifferential(f *testing.F) {
	f.Add(uint64(1))
	f.Fuzz(func(t *testing.T, seed uint64) {
		if res := Run(seed, 300, checkInvariants); res.Mismatch != "" {
			t.Fatal(res.Mismatch)
		}
	})
}
