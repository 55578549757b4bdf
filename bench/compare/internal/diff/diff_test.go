package diff

import (
	"flag"
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"

	"github.com/schedq/schedq/bench/compare/internal/schedqdrv"
	"github.com/schedq/schedq/bench/compare/internal/upstream"
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

// TestScripts replays written sequences, each a case where the two queues
// once parted ways, on both queues.
func TestScripts(t *testing.T) {
	noWindows := upstream.Options{DisablePopFromBackoff: true}
	cases := []struct {
		name   string
		opts   upstream.Options
		script string
	}{
		{"a delete reaches the attempt of a key re-added during it (error)", upstream.Options{},
			"add e; pop; add e; delete e; fail e error; flush; step 1m; flush; pop"},
		{"a delete reaches the attempt of a key re-added during it (rejected)", upstream.Options{},
			"add e; pop; add e; delete e; fail e PluginA; move NodeAdd queue; pop"},
		{"without pop-from-backoff, backoff ends strictly after the expiry (flush)", noWindows,
			"add p; pop; fail p error; step 1s; flush; pop; step 1s; flush; pop"},
		{"without pop-from-backoff, a move request at the expiry backs off", noWindows,
			"add p; pop; fail p PluginA; step 1s; move NodeAdd queue; pop; step 1ns; flush; pop"},
		{"without pop-from-backoff, a move request after the expiry activates", noWindows,
			"add p; pop; fail p PluginA; step 1001ms; move NodeAdd queue; pop"},
		{"a failed group attempt whose members were all deleted backs off, counted", upstream.Options{Groups: true},
			"podgroup g1 1; add d 0 group=g1; pop; delete d; add x 0 group=g1; fail error group=g1; step 500ms; flush; pop; step 1s; flush; pop"},
		{"with pop-from-backoff, a window leaves backoff whole", upstream.Options{},
			"add p 1; add q 2; pop; pop; fail p error; step 500ms; fail q error; step 1s; flush; pop; step 500ms; flush; pop; pop"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mismatch, err := RunScript(tc.opts, tc.script)
			if err != nil {
				t.Fatal(err)
			}
			if mismatch != "" {
				t.Fatal(mismatch)
			}
		})
	}
}

// TestDifferentialGroups is TestDifferential with pod groups (see
// RunGroups for the differences it excludes, and why).
func TestDifferentialGroups(t *testing.T) {
	runs, steps := 200, 300
	if testing.Short() {
		runs = 20
	}
	total := 0
	for seed := range uint64(runs) {
		res := RunGroups(seed, steps, checkInvariants)
		total += res.Steps
		if res.Mismatch != "" {
			t.Fatalf("seed %d: %s", seed, res.Mismatch)
		}
	}
	t.Logf("%d runs, %d steps, no difference", runs, total)
}
